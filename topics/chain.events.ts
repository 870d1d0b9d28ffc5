import { z } from 'zod';
import {
  address,
  decimalString,
  hex32,
  systemChainId,
  txHash,
  unixSeconds,
} from '../shared/schema/primitives.js';
import { defineTopic } from './envelope.js';

/** Where an event sits on its chain; with the block timestamp it is all a window decision needs. */
const position = {
  chainId: systemChainId,
  contract: address,
  blockNumber: z.number().int().nonnegative(),
  blockTimestamp: unixSeconds,
  txHash,
  logIndex: z.number().int().nonnegative(),
  /** The account that sent the transaction (who confirmed matters for case 7). */
  txFrom: address,
};

const timeFields = {
  expectedSingleStepTime: decimalString,
  tolerantSingleStepTime: decimalString,
  earliestRefundTime: decimalString,
  agreementReachedTime: decimalString,
};

export const transferOutEvent = z.strictObject({
  kind: z.literal('TransferOut'),
  ...position,
  transferId: hex32,
  sender: address,
  receiver: address,
  token: address,
  amount: decimalString,
  hashlock: hex32,
  ...timeFields,
  dstChainId: decimalString,
  dstAddress: decimalString,
  bidId: hex32,
  tokenDst: decimalString,
  amountDst: decimalString,
  nativeAmountDst: decimalString,
  requestor: z.string(),
  lpId: z.string(),
  userSign: z.string(),
  lpSign: z.string(),
});

export const transferInEvent = z.strictObject({
  kind: z.literal('TransferIn'),
  ...position,
  transferId: hex32,
  sender: address,
  receiver: address,
  token: address,
  tokenAmount: decimalString,
  ethAmount: decimalString,
  hashlock: hex32,
  ...timeFields,
  srcChainId: decimalString,
  srcTransferId: hex32,
});

const confirmed = <K extends 'ConfirmOut' | 'ConfirmIn'>(kind: K) =>
  z.strictObject({ kind: z.literal(kind), ...position, transferId: hex32, preimage: hex32 });
const refunded = <K extends 'RefundOut' | 'RefundIn'>(kind: K) =>
  z.strictObject({ kind: z.literal(kind), ...position, transferId: hex32 });

export const complaintEvent = z.strictObject({
  kind: z.literal('Complaint'),
  ...position,
  bidId: hex32,
  complainant: z.string(),
  /** The complaint struct as emitted, numbers as decimal strings. */
  complaint: z.record(z.string(), z.string()),
});

export const chainEventPayload = z.discriminatedUnion('kind', [
  transferOutEvent,
  transferInEvent,
  confirmed('ConfirmOut'),
  confirmed('ConfirmIn'),
  refunded('RefundOut'),
  refunded('RefundIn'),
  complaintEvent,
]);
export type ChainEvent = z.infer<typeof chainEventPayload>;

/** The header naming a chain event's kind (its payload's `kind`), set by encode(). */
export const CHAIN_EVENT_KIND_HEADER = 'kind';

export const chainEvents = defineTopic<ChainEvent>({
  name: 'chain.events',
  type: 'chain.event',
  version: 1,
  keyDoc: 'system chain id: the events of one chain stay in block order',
  key: (p) => p.chainId,
  payload: chainEventPayload,
  // Points uses complaints only: with this header it passes over the other events without reading them.
  headers: (p) => ({ [CHAIN_EVENT_KIND_HEADER]: p.kind }),
  retentionMs: null,
  // The Classifier's clocks rely on a chain's events staying in one partition in publish order: a height moves a
  // chain's clock once the event it names is handled, taking every earlier event of the chain as handled. Grown,
  // a chain's new events could be handled before its backlog in the old partition, and a window close without
  // them (a party blamed for an event that happened).
  fixedPartitions: true,
});

/**
 * Deterministic envelope id of a chain event, so a resend after a crash is a duplicate consumers drop.
 * Canonical (lower-case hash): the same log must never get two ids.
 */
export const chainEventId = (e: Pick<ChainEvent, 'chainId' | 'txHash' | 'logIndex'>): string =>
  `${e.chainId}:${e.txHash.toLowerCase()}:${e.logIndex}`;
