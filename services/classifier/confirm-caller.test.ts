/**
 * Who confirmed is proven by the contract's windows, not by the transaction's sender (spec/otmoic.md §3): until
 * T+3E only the lock's sender may confirm out, until T+3E+Tol only the LP's lock sender may confirm in. With a
 * smart wallet (Safe) or a bundler (ERC-4337) the transaction comes from another address, and an honest swap
 * must stay normal.
 */
import { describe, expect, it } from 'vitest';
import type { ChainEvent } from '../../topics/index.js';
import { judge } from './judge.js';
import { envAt, factsOf, HONEST_SWAP } from './judge-test-kit.js';
import { model } from './reference-model.js';
import { buildTimeline, DST, SRC, type TimelineSpec } from './swap-timeline.js';

const BUNDLER = '0x00000000000000000000000000000000000b0b1e';
const clocks = { [SRC.chainId]: 2_000, [DST.chainId]: 2_000 };

/** The timeline's events with every confirm sent by the bundler. */
function throughBundler(spec: TimelineSpec): { bidId: string; events: ChainEvent[] } {
  const timeline = buildTimeline(spec);
  const events = [...timeline.streams[SRC.chainId]!, ...timeline.streams[DST.chainId]!].map((e) =>
    e.kind === 'ConfirmOut' || e.kind === 'ConfirmIn' ? { ...e, txFrom: BUNDLER } : e,
  );
  return { bidId: timeline.bidId, events };
}

const verdictOf = (spec: TimelineSpec) => {
  const { bidId, events } = throughBundler(spec);
  const judgement = judge(factsOf(bidId, events), envAt(clocks));
  return judgement.status === 'decided'
    ? [judgement.verdict.outcome, judgement.verdict.case, judgement.verdict.party]
    : judgement;
};

describe('classifier: who confirmed, by the contract’s windows', () => {
  const honest = HONEST_SWAP;

  it('an honest swap whose confirms come through a bundler is normal (not case 5 or 6)', () => {
    expect(model(honest)).toMatchObject({ outcome: 'normal' });
    expect(verdictOf(honest)).toEqual(['normal', null, null]);
  });

  it('the LP confirming in before the user confirmed out, through a bundler, is no case 7', () => {
    const early = {
      ...honest,
      confirmOut: { by: 'user' as const, at: 1005 },
      confirmIn: { by: 'lp' as const, at: 1004 },
    };
    expect(model(early)).toMatchObject({ outcome: 'unknown' });
    expect(verdictOf(early)).toEqual(['unknown', null, null]);
  });

  it('in the non-LP window the transaction’s sender still decides: a stranger confirming in is case 7', () => {
    // T+3E+Tol = 1011: from then on anyone may confirm in; the bundler is not an address of the LP.
    const late = { ...honest, confirmOut: undefined, confirmIn: { by: 'user' as const, at: 1012 } };
    expect(model(late)).toMatchObject({ case: 7, party: 'user' });
    expect(verdictOf(late)).toEqual(['violation', 7, 'user']);
  });
});
