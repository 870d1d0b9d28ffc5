/**
 * A complaint about a swap from a chain this deployment does not watch, which may be a non-EVM one (Solana's
 * 32-byte addresses): its address or token is no EVM address, which says nothing against the complaint. It was
 * so for the destination only; a non-EVM source gave case 0 (an invalid complaint).
 */
import { describe, expect, it } from 'vitest';
import type { ChainEvent } from '../../topics/index.js';
import { judge } from './judge.js';
import { envAt, factsOf, HONEST_SWAP } from './judge-test-kit.js';
import { DST, SRC, buildTimeline } from './swap-timeline.js';

describe('a complaint about a swap from a chain this deployment does not watch (a non-EVM source)', () => {
  // The README: a chain not watched may be non-EVM; its 32-byte address says nothing against the complaint:
  // unknown, not case 0. Done for the destination only: a Solana source (501) gives case 0.
  const t = buildTimeline({ ...HONEST_SWAP, complaint: { by: 'lp', at: 1001 } });
  const complaint = t.streams.reputation!.find((e) => e.kind === 'Complaint')!;
  const solana = {
    ...complaint,
    complaint: {
      ...complaint.complaint,
      srcChainId: '501',
      srcAddress: (2n ** 255n + 12345n).toString(),
      srcToken: (2n ** 200n).toString(),
    },
  } as ChainEvent;

  it('is unknown, not an invalid complaint', () => {
    const j = judge(
      factsOf(t.bidId, [solana]),
      envAt({ [SRC.chainId]: 1001 + 86_402, [DST.chainId]: 1001 + 86_402 }),
    );
    // It was "case 0: the complaint's srcAddress: not an address" (the Solana sender's 32 bytes).
    expect(j.status).toBe('decided');
    if (j.status !== 'decided') return;
    expect([j.verdict.outcome, j.verdict.case]).toEqual(['unknown', null]);
    expect(j.verdict.rule).toContain('501 is not watched');
  });
});
