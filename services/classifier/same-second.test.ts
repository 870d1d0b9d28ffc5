import { describe, expect, it } from 'vitest';
import { judge } from './judge.js';
import { envAt, factsOf } from './judge-test-kit.js';
import { model } from './reference-model.js';
import { DST, SRC, buildTimeline, type TimelineSpec } from './swap-timeline.js';

/**
 * Chains with several blocks a second: a clock at X (the block time of the newest height) does not yet cover a
 * later block of the same second X. A decision that needs every event up to X waits for X + 1; deciding at X
 * blamed the wrong party (case 7 on the user instead of case 6 on the LP) or listed other transactions
 * depending on which block arrived first, so a replay could differ from the live run.
 */
const eventsOf = (spec: TimelineSpec) => {
  const t = buildTimeline(spec);
  return { bidId: t.bidId, all: [...t.streams[SRC.chainId]!, ...t.streams[DST.chainId]!] };
};

describe('events of a later block in the same second', () => {
  it('a ConfirmIn by a stranger at the second the user confirmed out is not case 7 before that second is over', () => {
    // Tol = 0: the user confirms out at T+3E (1009) on the source chain, in a block after another of 1009.
    const spec: TimelineSpec = {
      T: 1000,
      E: 3,
      Tol: 0,
      lpSign: 'lp',
      userSign: 'user',
      out: { kind: 'ok', at: 1000 },
      in: { kind: 'ok', at: 1001 },
      confirmOut: { by: 'user', at: 1009 },
      confirmIn: { by: 'user', at: 1009 },
    };
    const { bidId, all } = eventsOf(spec);
    const confirmOut = all.find((e) => e.kind === 'ConfirmOut')!;
    const withoutIt = all.filter((e) => e !== confirmOut);
    // The source clock at 1009: the ConfirmOut's block (also 1009) may still come. Before, this was case 7.
    const early = judge(factsOf(bidId, withoutIt), envAt({ [SRC.chainId]: 1009, [DST.chainId]: 1009 }));
    expect(early.status).toBe('pending');
    expect(early.status === 'pending' && early.wait).toEqual({
      kind: 'clock',
      chainId: SRC.chainId,
      until: 1010,
    });
    const late = judge(factsOf(bidId, all), envAt({ [SRC.chainId]: 1010, [DST.chainId]: 1010 }));
    expect(model(spec)).toMatchObject({ case: 6, party: 'lp' });
    expect(late.status === 'decided' && [late.verdict.case, late.verdict.party]).toEqual([6, 'lp']);
  });

  it("a verdict's transactions and complaints are those up to its second, whichever block of it arrived first", () => {
    // Case 3 at T+2E = 1006, and the user's ConfirmOut in a later block of that same second.
    const spec: TimelineSpec = {
      T: 1000,
      E: 3,
      Tol: 2,
      lpSign: 'lp',
      userSign: 'user',
      out: { kind: 'ok', at: 1000 },
      in: { kind: 'none' },
      confirmOut: { by: 'user', at: 1006 },
    };
    const { bidId, all } = eventsOf(spec);
    const out = all.find((e) => e.kind === 'TransferOut')!;
    const clocks = { [SRC.chainId]: 1006, [DST.chainId]: 1007 };
    const early = judge(factsOf(bidId, [out]), envAt(clocks));
    expect(early.status === 'pending' && early.wait).toEqual({
      kind: 'clock',
      chainId: SRC.chainId,
      until: 1007,
    });
    // Complaints filed up to the verdict's second must be seen past it too.
    const later = { [SRC.chainId]: 1007, [DST.chainId]: 1007 };
    const complaintsAt = judge(factsOf(bidId, all), envAt(later, 1006));
    expect(complaintsAt.status === 'pending' && complaintsAt.wait).toEqual({
      kind: 'complaints',
      until: 1007,
    });
    const decided = judge(factsOf(bidId, all), envAt(later, 1007));
    expect(decided.status).toBe('decided');
    if (decided.status !== 'decided') return;
    expect([decided.verdict.case, decided.verdict.party]).toEqual([3, 'lp']);
    expect(decided.verdict.transactions.map((t) => t.step)).toEqual(['transferOut', 'confirmOut']);
  });
});
