import { describe, expect, it } from 'vitest';
import type { ChainEvent } from '../../topics/index.js';
import { judge } from './judge.js';
import { envAt, factsOf } from './judge-test-kit.js';
import { model } from './reference-model.js';
import { DID_NAMES, DST, LP_ID, SRC, STRANGER, buildTimeline, type TimelineSpec } from './swap-timeline.js';

/**
 * DESIGN §7: the external answers a decision relied on are recorded, so a replay is identical. A verdict records
 * the DID answers asked for by facts up to its own time (later facts arrive in any order, so their lookups
 * would make the record depend on it); but whether a ConfirmIn after that time is case 7 rests on its sender's
 * DID names, and the decision waits until that ConfirmIn is surely seen. Its answer was not recorded: a replay
 * asked the live service again, and a wallet whose names changed since turned a case 5 into a case 7.
 */
const HOT_WALLET = '0x00000000000000000000000000000000000a11ce';

describe('a DID answer the decision rests on', () => {
  // The user never confirms out; the LP confirms in at T+3E+Tol from a wallet known only through DID: in that
  // one second both the LP and anyone else may confirm in, so the wallet's DID names decide (before it the
  // contract's window proves the LP, after it nobody but another wallet of the LP).
  const spec: TimelineSpec = {
    T: 1000,
    E: 3,
    Tol: 4,
    lpSign: 'lp',
    userSign: 'user',
    out: { kind: 'ok', at: 1000 },
    in: { kind: 'ok', at: 1001 },
    confirmIn: { by: 'lp', at: 1013 },
  };
  const t = buildTimeline(spec);
  const events: ChainEvent[] = [...t.streams[SRC.chainId]!, ...t.streams[DST.chainId]!].map((e) =>
    e.kind === 'ConfirmIn' ? { ...e, txFrom: HOT_WALLET } : e,
  );
  const clocks = { [SRC.chainId]: 2000, [DST.chainId]: 2000 };
  const withNames = (names: Record<string, readonly string[]>) => ({
    ...envAt(clocks),
    didNames: (address: string) => names[address] ?? DID_NAMES[address] ?? [],
  });

  it('is recorded with the verdict even when its fact comes after the verdict’s time', () => {
    const decided = judge(factsOf(t.bidId, events), withNames({ [HOT_WALLET]: [LP_ID] }));
    expect(decided.status).toBe('decided');
    if (decided.status !== 'decided') return;
    expect(model(spec)).toMatchObject({ case: 5, party: 'user', blockTime: 1009 });
    expect([decided.verdict.case, decided.verdict.party, decided.verdict.blockTime]).toEqual([
      5,
      'user',
      1009,
    ]);
    expect(decided.verdict.evidence.didNames[HOT_WALLET]).toEqual([LP_ID]);
    // The answer decides: the same wallet without the LP's name is a stranger confirming in, case 7.
    const other = judge(factsOf(t.bidId, events), withNames({ [HOT_WALLET]: [] }));
    expect(other.status === 'decided' && [other.verdict.case, other.verdict.party]).toEqual([7, 'user']);
  });

  it('is the same record in every arrival order', () => {
    const env = withNames({ [HOT_WALLET]: [LP_ID] });
    const forward = judge(factsOf(t.bidId, events), env);
    const backward = judge(factsOf(t.bidId, [...events].reverse()), env);
    expect(forward.status === 'decided' && forward.verdict.evidence).toEqual(
      backward.status === 'decided' && backward.verdict.evidence,
    );
  });
});

describe('the DID answers that decide case 3 or 4', () => {
  // The LP answers with a wrong amount at T+1 (case 4); a stranger's TransferIn with the right terms at T+2,
  // before T+2E: whether it is the LP's answer rests on the stranger's DID names.
  const spec: TimelineSpec = {
    T: 1000,
    E: 3,
    Tol: 2,
    lpSign: 'lp',
    userSign: 'user',
    out: { kind: 'ok', at: 1000 },
    in: { kind: 'wrong_amount', at: 1001 },
    griefIn: { at: 1002 },
  };
  const t = buildTimeline(spec);
  const events = [...t.streams[SRC.chainId]!, ...t.streams[DST.chainId]!];
  const clocks = { [SRC.chainId]: 2000, [DST.chainId]: 2000 };
  const stranger = STRANGER.address.toLowerCase();

  it('are recorded although the later TransferIn comes after case 4’s block time: a replay needs no lookup', () => {
    const live = judge(factsOf(t.bidId, events), envAt(clocks));
    expect(live).toMatchObject({ status: 'decided', verdict: { case: 4, party: 'lp', blockTime: 1001 } });
    if (live.status !== 'decided') return;
    expect(live.verdict.evidence.didNames[stranger]).toEqual(DID_NAMES[stranger] ?? []);
    // A replay on the recorded answers alone (the DID service down, or the stranger's names changed since).
    const recorded = live.verdict.evidence.didNames;
    const replay = judge(factsOf(t.bidId, events), { ...envAt(clocks), didNames: (a) => recorded[a] });
    expect(replay).toEqual(live);
  });
});
