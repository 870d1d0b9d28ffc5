import { z } from 'zod';
import { address, decimalString, hex32, systemChainId, unixSeconds } from '../shared/schema/primitives.js';
import { defineTopic } from './envelope.js';

export const relayCommandPayload = z.strictObject({
  commandId: z.string().min(1),
  action: z.enum(['confirm_out', 'confirm_in', 'refund_out', 'refund_in']),
  systemChainId,
  transactionType: z.string().min(1),
  /** A named level (FAST, STANDARD, SAFELOW) or a wei amount. */
  gasPrice: z.union([z.enum(['FAST', 'STANDARD', 'SAFELOW']), decimalString]),
  transferId: hex32,
  call: z.strictObject({
    sender: address,
    receiver: address,
    token: address,
    tokenAmount: decimalString,
    ethAmount: decimalString,
    hashlock: hex32,
    expectedSingleStepTime: unixSeconds,
    tolerantSingleStepTime: unixSeconds,
    earliestRefundTime: unixSeconds,
    agreementReachedTime: unixSeconds,
    preimage: hex32.optional(),
  }),
});
export type RelayCommand = z.infer<typeof relayCommandPayload>;

export const relayCommands = defineTopic<RelayCommand>({
  name: 'relay.commands',
  type: 'relay.command',
  version: 1,
  keyDoc: 'transferId: commands for one transfer are executed in order',
  key: (p) => p.transferId,
  payload: relayCommandPayload,
  retentionMs: 30 * 24 * 3_600_000,
});
