import { z } from 'zod';
import { hex32, systemChainId, unixSeconds } from '../shared/schema/primitives.js';
import { defineTopic } from './envelope.js';

/** The arbitration outcome of one swap (DESIGN §5.2): decided once its window closed on its chain. */
export const swapVerdictPayload = z.strictObject({
  bidId: hex32.nullable(),
  transferOutId: hex32.nullable(),
  srcChainId: systemChainId,
  outcome: z.enum(['normal', 'violation', 'invalid_complaint', 'unknown']),
  /** Arbitration case 0–7, or null for a normal swap / unknown status. */
  case: z.number().int().min(0).max(7).nullable(),
  party: z.enum(['user', 'lp']).nullable(),
  /** Block time on which the decision became possible. */
  decidedAt: unixSeconds,
});
export type SwapVerdict = z.infer<typeof swapVerdictPayload>;

export const swapVerdicts = defineTopic<SwapVerdict>({
  name: 'swap.verdicts',
  type: 'swap.verdict',
  version: 1,
  keyDoc: 'bidId (or transferOut id when there is no bid): verdicts of one swap stay in order',
  key: (p) => p.bidId ?? p.transferOutId ?? 'unknown',
  payload: swapVerdictPayload,
  retentionMs: null,
});
