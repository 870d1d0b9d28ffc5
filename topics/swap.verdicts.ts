import { z } from 'zod';
import { address, hex32, systemChainId, txHash, unixSeconds } from '../shared/schema/primitives.js';
import { defineTopic } from './envelope.js';

/** One transaction of a swap, with the chain it is on and its block time. */
export const swapTransaction = z.strictObject({
  step: z.enum([
    'transferOut',
    'transferIn',
    'confirmOut',
    'confirmIn',
    'refundOut',
    'refundIn',
    'complaint',
  ]),
  chainId: systemChainId,
  txHash,
  blockTime: unixSeconds,
});
export type SwapTransaction = z.infer<typeof swapTransaction>;

/** The complaint a verdict answers (a SubmitComplaint event), and what the classifier made of it. */
export const verdictComplaint = z.strictObject({
  /** Terminus DID of the complainant (its ownership was checked by the contract). */
  complainant: z.string(),
  /** Which party the complainant is, or null when it is neither (case 0). */
  complainantParty: z.enum(['user', 'lp']).nullable(),
  /** False when case 0 holds for it: a signature does not prove its party, or the complainant is no party. */
  valid: z.boolean(),
  /** Why it is invalid, in words; null when valid. */
  invalidReason: z.string().nullable(),
  /** The Complaint struct as emitted (numbers as decimal strings). */
  fields: z.record(z.string(), z.string()),
});

/**
 * Evidence the verdict rests on. DID answers are recorded so that a replay decides identically (DESIGN §7).
 */
export const verdictEvidence = z.strictObject({
  /** userSign over the TransferOut's own agreement recovers `requestor` (null: no TransferOut). */
  userConsent: z.boolean().nullable(),
  /** lpSign over the TransferOut's own agreement recovers an address whose DID names include lpId. */
  lpConsent: z.boolean().nullable(),
  /** Address lpSign recovers to (null when there is nothing to recover). */
  lpSigner: address.nullable(),
  /** DID names (`/find/owner/{address}`) the decision used, by lower-case address. */
  didNames: z.record(z.string(), z.array(z.string())),
});

/**
 * The one final arbitration outcome of a swap (DESIGN §7): decided once the windows it depends on have closed
 * on the deciding chain's block time. Deterministic envelope id `verdict:<bidId>`.
 */
export const swapVerdictPayload = z.strictObject({
  bidId: hex32,
  srcChainId: systemChainId,
  dstChainId: systemChainId.nullable(),
  transferOutId: hex32.nullable(),
  transferInId: hex32.nullable(),
  /** The user: lower-case address (the TransferOut's sender, or the complaint's requestor). */
  user: z.string().nullable(),
  lpId: z.string().nullable(),
  outcome: z.enum(['normal', 'violation', 'invalid_complaint', 'unknown']),
  /** Arbitration case 0–7; null for a normal swap or an unknown status. */
  case: z.number().int().min(0).max(7).nullable(),
  /** Who broke the swap (violations only). */
  party: z.enum(['user', 'lp']).nullable(),
  /** The user's address (lower-case) or the LP's lpId (violations only). */
  subject: z.string().nullable(),
  /** The rule that fired, in words. */
  rule: z.string().min(1),
  /** Block time of the deciding fact (a window's end, or the event that settled it). */
  blockTime: unixSeconds,
  /** The chain whose block time decided. */
  decidedOn: systemChainId,
  /** TransferIn block time − TransferOut block time, for normal swaps. */
  responseTimeSeconds: z.number().int().nonnegative().nullable(),
  transactions: z.array(swapTransaction),
  complaint: verdictComplaint.nullable(),
  evidence: verdictEvidence,
});
export type SwapVerdict = z.infer<typeof swapVerdictPayload>;

export const swapVerdicts = defineTopic<SwapVerdict>({
  name: 'swap.verdicts',
  type: 'swap.verdict',
  version: 1,
  keyDoc: 'bidId: the verdict of one swap',
  key: (p) => p.bidId,
  payload: swapVerdictPayload,
  retentionMs: null,
});

export const verdictId = (bidId: string): string => `verdict:${bidId.toLowerCase()}`;
