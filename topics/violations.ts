import { z } from 'zod';
import { hex32, systemChainId, txHash, unixSeconds } from '../shared/schema/primitives.js';
import { defineTopic } from './envelope.js';

/** One deduction-worthy fact; Points turns it into a deduction record that explains a score. */
export const violationPayload = z.strictObject({
  party: z.enum(['user', 'lp']),
  /** User address (lower-case) or LP id. */
  subject: z.string().min(1),
  case: z.number().int().min(1).max(7),
  bidId: hex32.nullable(),
  chainId: systemChainId,
  txHashes: z.array(txHash),
  /** Block time of the violation: the look-back window counts from it. */
  blockTime: unixSeconds,
  /** The rule that fired, in words, e.g. "case 3: no transferIn by T+2E". */
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
