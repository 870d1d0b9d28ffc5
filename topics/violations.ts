import { z } from 'zod';
import { hex32, systemChainId, unixSeconds } from '../shared/schema/primitives.js';
import { defineTopic } from './envelope.js';
import { swapTransaction } from './swap.verdicts.js';

/**
 * One deduction-worthy fact, at most one per swap; Points turns it into a deduction record that explains a
 * score. Deterministic envelope id `violation:<bidId>`.
 */
export const violationPayload = z.strictObject({
  party: z.enum(['user', 'lp']),
  /** User address (lower-case) or LP id. */
  subject: z.string().min(1),
  case: z.number().int().min(1).max(7),
  bidId: hex32,
  srcChainId: systemChainId,
  dstChainId: systemChainId.nullable(),
  /** The chain whose block time decided. */
  chainId: systemChainId,
  /** The swap's transactions (each with its chain and block time). */
  transactions: z.array(swapTransaction),
  /** Block time of the violation: the look-back window counts from it. */
  blockTime: unixSeconds,
  /** The rule that fired, in words, e.g. "case 3: no TransferIn by the LP by T+2E". */
  rule: z.string().min(1),
});
export type Violation = z.infer<typeof violationPayload>;

export const violations = defineTopic<Violation>({
  name: 'violations',
  type: 'violation',
  version: 1,
  keyDoc: 'party:subject: deductions of one user or LP stay in order',
  key: (p) => `${p.party}:${p.subject}`,
  payload: violationPayload,
  retentionMs: null,
});

export const violationId = (bidId: string): string => `violation:${bidId.toLowerCase()}`;
