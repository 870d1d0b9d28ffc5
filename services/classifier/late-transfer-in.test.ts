import { describe, expect, it } from 'vitest';
import type { ChainEvent } from '../../topics/index.js';
import { judge } from './judge.js';
import { envAt, factsOf, HONEST_SWAP } from './judge-test-kit.js';
import { buildTimeline, DST, SRC } from './swap-timeline.js';

type TransferIn = Extract<ChainEvent, { kind: 'TransferIn' }>;
const shown = (j: ReturnType<typeof judge>) =>
  j.status === 'decided'
    ? [j.verdict.outcome, j.verdict.case, j.verdict.party, j.verdict.blockTime]
    : ['pending'];

/**
 * §7: case 3 is "no TransferIn by T+2E" on the destination chain, checked before case 4. A TransferIn that
 * differs in its agreement time has a later T+2E of its own, so the contract takes it after the swap's: it is
 * no answer by T+2E. It was case 4 or case 3 depending on whether the destination clock passed T+2E before
 * its chunk came, so the 5-block chunks of the Connector decided which case the LP got.
 */
describe('a TransferIn the contract takes after the swap’s T+2E (its own agreement time differs)', () => {
  // The honest swap (T 1000, E 3, Tol 2) without its confirms.
  const { confirmOut: _co, confirmIn: _ci, ...spec } = HONEST_SWAP;
  const t = buildTimeline(spec);
  // T' = 1001: the contract takes it until 1007, one second after the swap's T+2E = 1006.
  const events = [...t.streams[SRC.chainId]!, ...t.streams[DST.chainId]!].map((e) =>
    e.kind === 'TransferIn'
      ? ({ ...e, blockTimestamp: 1007, agreementReachedTime: '1001' } as TransferIn)
      : e,
  );

  it('is case 3 at T+2E whether the destination clock passed T+2E before it came or with it', () => {
    const before = events.filter((e) => e.kind === 'TransferOut');
    const early = judge(factsOf(t.bidId, before), envAt({ [SRC.chainId]: 1007, [DST.chainId]: 1007 }));
    const late = judge(factsOf(t.bidId, events), envAt({ [SRC.chainId]: 1010, [DST.chainId]: 1010 }));
    expect(shown(early)).toEqual(['violation', 3, 'lp', 1006]);
    expect(shown(late)).toEqual(['violation', 3, 'lp', 1006]);
  });

  it('the same TransferIn by T+2E is case 4, at its own block time', () => {
    const inTime = events.map((e) => (e.kind === 'TransferIn' ? { ...e, blockTimestamp: 1006 } : e));
    const decided = judge(factsOf(t.bidId, inTime), envAt({ [SRC.chainId]: 1010, [DST.chainId]: 1010 }));
    expect(shown(decided)).toEqual(['violation', 4, 'lp', 1006]);
  });
});
