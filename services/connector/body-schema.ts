import { z } from 'zod';

// What the Connector accepts from chain clients (spec/otmoic.md §4), parsed at the boundary. Only the parts
// it relies on are constrained; the rest of the original bodies (full receipts, blocks) is kept as it came,
// for the archive.

const hexQuantity = z.string().regex(/^0x[0-9a-fA-F]+$/, 'must be a 0x-prefixed hex quantity');
// Non-capturing: the same language, without a capture per byte pair of a log's data.
const hex = z.string().regex(/^0x(?:[0-9a-fA-F]{2})*$/, 'must be 0x-prefixed hex');
const hash32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be 32 bytes of hex');
const addressText = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 20-byte hex address');

export const eventBodySchema = z.looseObject({
  event: z.looseObject({
    address: addressText,
    topics: z.array(hash32).min(1, 'a contract event has topic0'),
    data: hex,
    blockNumber: hexQuantity,
    transactionHash: hash32,
    logIndex: hexQuantity,
  }),
  tx: z.looseObject({ from: addressText }),
  block: z.looseObject({ timestamp: hexQuantity, number: hexQuantity }),
  type: z.enum([
    'TransferOut',
    'TransferIn',
    'ConfirmOut',
    'ConfirmIn',
    'RefundOut',
    'RefundIn',
    'Reputation',
  ]),
  event_parse: z.record(z.string(), z.unknown()).optional(),
  chain_id: z.union([z.string(), z.number()]).transform(String),
});
export type EventBody = z.infer<typeof eventBodySchema>;

export const heightUpdateSchema = z.strictObject({
  type: z.literal('update_height'),
  height: z.number().int().nonnegative(),
  data: z.array(eventBodySchema).optional(),
});
export type HeightUpdate = z.infer<typeof heightUpdateSchema>;

/** A callback body is either an update_height (merged chunk or heartbeat) or one event. */
export const callbackBodySchema = z.union([heightUpdateSchema, eventBodySchema]);
