import type { EventFragment, Interface } from 'ethers';
import { EVENT_TYPES, reputationInterface, swapInterface } from '../../shared/otmoic/abi.js';
import { CodedError } from '../../shared/errors/coded-error.js';
import type { ChainEvent } from '../../topics/chain.events.js';
import type { EventBody } from './body-schema.js';
import { checksummed, compileEventDecoder } from './log-decoder.js';

/** Contract addresses of one chain, as configured: the only sources of events we accept. */
export interface ChainContracts {
  systemChainId: string;
  swap: string;
  reputation?: string;
}

/** Which of the chain's configured contracts `address` (any letter case) is, if any. */
export function configuredContract(
  chain: ChainContracts,
  address: string,
): 'swap' | 'reputation' | undefined {
  const a = address.toLowerCase();
  if (a === chain.swap.toLowerCase()) return 'swap';
  if (chain.reputation !== undefined && a === chain.reputation.toLowerCase()) return 'reputation';
  return undefined;
}

/** Why a body was refused; each is counted on /metrics. */
export type RejectReason =
  | 'foreign_contract'
  | 'wrong_chain'
  | 'undecodable'
  | 'type_mismatch'
  | 'too_far_ahead'
  | 'wrong_stream'
  | 'removed'
  | 'inconsistent';

export class RejectedEvent extends CodedError {
  constructor(
    readonly reason: RejectReason,
    message: string,
  ) {
    super(`EVENT_${reason.toUpperCase()}`, message);
  }
}

// ethers' parseLog hashes every event signature of the ABI on each call to find the log's event: the
// topic → event map is built once per interface instead, with each event's compiled data decoder.
interface KnownEvent {
  fragment: EventFragment;
  decode: (data: string, topics: readonly string[]) => Record<string, unknown>;
}
const topicMaps = new WeakMap<Interface, Map<string, KnownEvent>>();
function eventsByTopic(iface: Interface): Map<string, KnownEvent> {
  let map = topicMaps.get(iface);
  if (!map) {
    map = new Map();
    iface.forEachEvent((fragment) => {
      if (fragment.anonymous) return;
      const fast = compileEventDecoder(fragment);
      map!.set(fragment.topicHash.toLowerCase(), {
        fragment,
        decode: fast
          ? (data) => fast(data)
          : (data, topics) => iface.decodeEventLog(fragment, data, topics).toObject(true),
      });
    });
    topicMaps.set(iface, map);
  }
  return map;
}

const sameHex = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

// Module-level, not closures made per event: under tsx each named closure also costs a defineProperty of
// its name, which showed in the Connector's profile.
const dec = (v: unknown) => (v as bigint).toString(10);
const lower = (v: unknown) => String(v).toLowerCase();
/** Only the two transfer events carry the agreement's times. */
const times = (a: Record<string, unknown>) => ({
  expectedSingleStepTime: dec(a.expectedSingleStepTime),
  tolerantSingleStepTime: dec(a.tolerantSingleStepTime),
  earliestRefundTime: dec(a.earliestRefundTime),
  agreementReachedTime: dec(a.agreementReachedTime),
});

/**
 * Turns one chain-client event body into the `chain.events` payload. The raw log is decoded again with our
 * ABI (the `event_parse` of a chain client is not trusted), it must come from the configured contract of the
 * chain it was posted for, and its `type` must match what the log is.
 */
export function normalizeEvent(body: EventBody, chain: ChainContracts): ChainEvent {
  if (body.chain_id !== chain.systemChainId) {
    throw new RejectedEvent(
      'wrong_chain',
      `event of chain ${body.chain_id} posted for chain ${chain.systemChainId}`,
    );
  }
  // The RPC fill drops such logs too (RpcReader.logs): a reorg took the log back, so it never happened.
  if (body.event.removed === true) {
    throw new RejectedEvent(
      'removed',
      `the log ${body.event.transactionHash}:${Number(body.event.logIndex)} is marked removed (taken back by a reorg): not an event`,
    );
  }
  const contract = configuredContract(chain, body.event.address);
  const isSwap = contract === 'swap';
  if (contract === undefined) {
    throw new RejectedEvent(
      'foreign_contract',
      `event from ${body.event.address}, not a configured contract of chain ${chain.systemChainId}`,
    );
  }
  let log: { name: string; args: Record<string, unknown> } | null;
  try {
    const iface = isSwap ? swapInterface : reputationInterface;
    const known = eventsByTopic(iface).get(String(body.event.topics[0]).toLowerCase());
    log = known
      ? { name: known.fragment.name, args: known.decode(body.event.data, body.event.topics) }
      : null;
  } catch (err) {
    throw new RejectedEvent(
      'undecodable',
      `log data does not decode: ${(err as Error).message.split('(')[0]}`,
    );
  }
  if (!log || !(log.name in EVENT_TYPES)) throw new RejectedEvent('undecodable', 'not an Otmoic event');
  if (EVENT_TYPES[log.name as keyof typeof EVENT_TYPES] !== body.type) {
    throw new RejectedEvent('type_mismatch', `type "${body.type}" but the log is ${log.name}`);
  }

  const position = {
    chainId: chain.systemChainId,
    contract: checksummed(body.event.address),
    blockNumber: Number(body.event.blockNumber),
    blockTimestamp: Number(body.block.timestamp),
    txHash: body.event.transactionHash.toLowerCase(),
    logIndex: Number(body.event.logIndex),
    txFrom: checksummed(body.tx.from),
  };
  if (Number(body.block.number) !== position.blockNumber) {
    throw new RejectedEvent(
      'undecodable',
      `block ${Number(body.block.number)} does not hold the log's block ${position.blockNumber}`,
    );
  }
  // The block and the receipt vouch for the log's time and its sender (txFrom decides who confirmed): they
  // must be the log's own, where the body names them.
  if (body.block.hash && body.event.blockHash && !sameHex(body.block.hash, body.event.blockHash)) {
    throw new RejectedEvent(
      'inconsistent',
      `block hash ${body.block.hash} is not the log's block hash ${body.event.blockHash}`,
    );
  }
  if (body.tx.transactionHash && !sameHex(body.tx.transactionHash, body.event.transactionHash)) {
    throw new RejectedEvent(
      'inconsistent',
      `the receipt of ${body.tx.transactionHash} is not the log's transaction ${body.event.transactionHash}`,
    );
  }
  // Typed loosely as ethers' Result was: encode() checks the payload against the topic's schema.
  const a = log.args as Record<string, any>;
  switch (log.name) {
    case 'LogNewTransferOut':
      return {
        kind: 'TransferOut',
        ...position,
        transferId: lower(a.transferId),
        sender: a.sender,
        receiver: a.receiver,
        token: a.token,
        amount: dec(a.amount),
        hashlock: lower(a.hashlock),
        ...times(a),
        dstChainId: dec(a.dstChainId),
        dstAddress: dec(a.dstAddress),
        bidId: lower(a.bidId),
        tokenDst: dec(a.tokenDst),
        amountDst: dec(a.amountDst),
        nativeAmountDst: dec(a.nativeAmountDst),
        requestor: a.requestor,
        lpId: a.lpId,
        userSign: a.userSign,
        lpSign: a.lpSign,
      };
    case 'LogNewTransferIn':
      return {
        kind: 'TransferIn',
        ...position,
        transferId: lower(a.transferId),
        sender: a.sender,
        receiver: a.receiver,
        token: a.token,
        tokenAmount: dec(a.token_amount),
        ethAmount: dec(a.eth_amount),
        hashlock: lower(a.hashlock),
        ...times(a),
        srcChainId: dec(a.srcChainId),
        srcTransferId: lower(a.srcTransferId),
      };
    case 'LogTransferOutConfirmed':
    case 'LogTransferInConfirmed':
      return {
        kind: log.name === 'LogTransferOutConfirmed' ? 'ConfirmOut' : 'ConfirmIn',
        ...position,
        transferId: lower(a.transferId),
        preimage: lower(a.preimage),
      };
    case 'LogTransferOutRefunded':
    case 'LogTransferInRefunded':
      return {
        kind: log.name === 'LogTransferOutRefunded' ? 'RefundOut' : 'RefundIn',
        ...position,
        transferId: lower(a.transferId),
      };
    default: {
      const complaint = a.complaint as Record<string, unknown>;
      return {
        kind: 'Complaint',
        ...position,
        bidId: lower(a.bidId),
        complainant: a.complainant,
        complaint: Object.fromEntries(
          Object.entries(complaint).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString(10) : String(v)]),
        ),
      };
    }
  }
}
