import { z } from 'zod';
import { hex32, hexBytes } from '../shared/schema/primitives.js';
import { defineTopic } from './envelope.js';

export const complaintCommandPayload = z.strictObject({
  bidId: hex32,
  /** The complaint exactly as the SDK sent it (validated by the Agent at its HTTP boundary). */
  complaint: z.record(z.string(), z.union([z.string(), z.number()])),
  signature: hexBytes,
  /** Terminus DID of the complainant. */
  domain: z.string().min(1),
});
export type ComplaintCommand = z.infer<typeof complaintCommandPayload>;

export const complaintCommands = defineTopic<ComplaintCommand>({
  name: 'complaint.commands',
  type: 'complaint.submit',
  version: 1,
  keyDoc: 'bidId: one complaint per bid, submitted in order',
  key: (p) => p.bidId,
  payload: complaintCommandPayload,
  retentionMs: 30 * 24 * 3_600_000,
});
