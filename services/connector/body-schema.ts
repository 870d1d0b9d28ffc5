import { z } from 'zod';

// What the Connector accepts from chain clients (spec/otmoic.md §4), parsed at the boundary. Only the parts
// it relies on are constrained; the rest of the original bodies (full receipts, blocks) is kept as it came,
// for the archive.

/**
 * A hex quantity the Connector turns into a JS number (block numbers, timestamps, log indexes): at most
 * 2^53 − 1 = 0x1fffffffffffff, so every body accepted here also passes the topic schemas (safe integers).
 * In the pattern, not a refine, so the served OpenAPI document states the bound: up to 13 hex digits, or 14
 * starting with 1 (leading zeros aside).
 */
export const safeHexQuantity = z
  .string()
  .regex(
    /^0x0*(?:[0-9a-fA-F]{1,13}|1[0-9a-fA-F]{13})$/,
    'must be a 0x-prefixed hex quantity of at most 0x1fffffffffffff (2^53 − 1)',
  );
// Non-capturing: the same language, without a capture per byte pair of a log's data.
const hex = z.string().regex(/^0x(?:[0-9a-fA-F]{2})*$/, 'must be 0x-prefixed hex');
const hash32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be 32 bytes of hex');
const addressText = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 20-byte hex address');

export const eventBodySchema = z.looseObject({
  event: z.looseObject({
    address: addressText,
    topics: z.array(hash32).min(1, 'a contract event has topic0'),
    data: hex,
    blockNumber: safeHexQuantity,
    transactionHash: hash32,
    logIndex: safeHexQuantity,
    // Checked against `block.hash` when both are there (normalizeEvent); null only for a pending log.
    blockHash: hash32.nullish(),
    // `true`: the log was taken back by a reorg, so it is no event (refused in normalizeEvent).
    removed: z.boolean().optional(),
  }),
  tx: z.looseObject({ from: addressText, transactionHash: hash32.nullish() }),
  block: z.looseObject({ timestamp: safeHexQuantity, number: safeHexQuantity, hash: hash32.nullish() }),
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
  // Compared as text with the configured id, never made a number; a number must still be a plain integer.
  chain_id: z.union([z.string().max(100), z.number().int().nonnegative()]).transform(String),
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
