import type { Interface } from 'ethers';
import {
  EVENT_TYPES,
  reputationInterface,
  swapInterface,
  type ChainEventType,
} from '../../shared/otmoic/abi.js';
import { parseLogLenient } from '../../shared/otmoic/parse-log.js';
import type { ChainReader, RawBlock, RawLog, RawReceipt } from './chain-reader.js';
import { eventParse, type EventParse } from './event-parse.js';

/** One event as the original chain client posted it; keys in the original's order. */
export interface EventBody {
  event: RawLog;
  tx: RawReceipt;
  eventParse: EventParse;
  block: RawBlock;
  type: ChainEventType;
  /** JSON text of the decoded arguments by name (our reconstruction of the original's transfer summary). */
  transfer_info: string;
  /** JSON text of `event`. */
  event_raw: string;
  event_parse: EventParse;
  chain_id: string;
}

export interface ContractAddresses {
  swap: string;
  reputation?: string;
}

/** Decodes the logs of one block range and builds their bodies, fetching each block and receipt once. */
export async function buildEventBodies(
  reader: Pick<ChainReader, 'block' | 'receipt'>,
  logs: readonly RawLog[],
  contracts: ContractAddresses,
  systemChainId: string,
): Promise<EventBody[]> {
  const blocks = new Map<string, Promise<RawBlock>>();
  const receipts = new Map<string, Promise<RawReceipt>>();
  const bodies: EventBody[] = [];
  for (const log of logs) {
    const iface = interfaceFor(log.address, contracts);
    // A string that is not UTF-8 (anyone can emit one) is read leniently: failing here failed every step on
    // the range, and the follower (every registration of the chain) stopped there for good.
    const description = iface && parseLogLenient(iface, { topics: log.topics, data: log.data });
    if (!description || !(description.name in EVENT_TYPES)) continue; // admin events (fees, owner) are not swap facts
    const type = EVENT_TYPES[description.name as keyof typeof EVENT_TYPES];
    if (!blocks.has(log.blockHash)) blocks.set(log.blockHash, reader.block(log.blockHash));
    if (!receipts.has(log.transactionHash))
      receipts.set(log.transactionHash, reader.receipt(log.transactionHash));
    const parse = eventParse(description);
    // Both awaited together: awaited one after the other, a failed block read (the same RPC batch as the
    // receipt's) was a rejection nobody handled once the receipt's failure ended the loop, and Node ends the
    // process on those.
    const [tx, block] = await Promise.all([receipts.get(log.transactionHash)!, blocks.get(log.blockHash)!]);
    bodies.push({
      event: log,
      tx,
      eventParse: parse,
      block,
      type,
      // The original's WatcherFactory: the receipt as JSON text (LP nodes store it as such).
      transfer_info: JSON.stringify(tx),
      event_raw: JSON.stringify(log),
      event_parse: parse,
      chain_id: systemChainId,
    });
  }
  return bodies;
}

function interfaceFor(address: string, contracts: ContractAddresses): Interface | undefined {
  const a = address.toLowerCase();
  if (a === contracts.swap.toLowerCase()) return swapInterface;
  if (contracts.reputation && a === contracts.reputation.toLowerCase()) return reputationInterface;
  return undefined;
}
