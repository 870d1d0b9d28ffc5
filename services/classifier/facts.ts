/**
 * The facts of one swap as the classifier has seen them, and the outside knowledge its decision may use.
 * Everything here is plain data: the decision function (judge.ts) is pure over it.
 */
import { transferOutBid } from '../../shared/otmoic/agreement.js';
import type { ChainEvent } from '../../topics/index.js';

export type EventOf<K extends ChainEvent['kind']> = Extract<ChainEvent, { kind: K }>;
export type TransferOut = EventOf<'TransferOut'>;
export type TransferIn = EventOf<'TransferIn'>;
export type Confirm = EventOf<'ConfirmOut'> | EventOf<'ConfirmIn'>;
export type Refund = EventOf<'RefundOut'> | EventOf<'RefundIn'>;
export type ComplaintEvent = EventOf<'Complaint'>;

/**
 * A swap is one TransferOut keyed by its bidId (DESIGN §7): the first in chain order (`byChainPosition`) of
 * the TransferOuts whose own fields hash to that bid (`executesItsBid`). Each list holds what joined it so
 * far, in a canonical order (block time, chain, block, log index), so the decision never depends on arrival
 * order. The lists may hold events of another TransferOut of the bid that was the swap until an earlier
 * copy of the same agreement came: the decision reads only those of `out`.
 */
export interface SwapFacts {
  bidId: string;
  out: TransferOut | null;
  /**
   * TransferIns whose srcTransferId is the TransferOut's transferId (any sender, any chain), or that of a later
   * lock of the same agreement it displaced (not read by the decision).
   */
  ins: TransferIn[];
  /** ConfirmOut / RefundOut of the TransferOut, ConfirmIn / RefundIn of any of `ins`. */
  confirmOuts: EventOf<'ConfirmOut'>[];
  refundOuts: EventOf<'RefundOut'>[];
  confirmIns: EventOf<'ConfirmIn'>[];
  refundIns: EventOf<'RefundIn'>[];
  complaints: ComplaintEvent[];
}

export const emptyFacts = (bidId: string): SwapFacts => ({
  bidId,
  out: null,
  ins: [],
  confirmOuts: [],
  refundOuts: [],
  confirmIns: [],
  refundIns: [],
  complaints: [],
});

/** Canonical order of events of a swap: block time, then chain, block and log index. */
export function byChainPosition(a: ChainEvent, b: ChainEvent): number {
  return (
    a.blockTimestamp - b.blockTimestamp ||
    (a.chainId < b.chainId ? -1 : a.chainId > b.chainId ? 1 : 0) ||
    a.blockNumber - b.blockNumber ||
    a.logIndex - b.logIndex
  );
}

const samePosition = (a: ChainEvent, b: ChainEvent): boolean =>
  a.chainId === b.chainId && a.txHash === b.txHash && a.logIndex === b.logIndex;

const executes = new WeakMap<TransferOut, ReturnType<typeof transferOutBid>>();
/**
 * Whether a TransferOut is a swap of the bid it names: its own fields hash to that bidId (spec §5, mapped by
 * shared/otmoic/agreement.ts). The contract does not check the bid, so a TransferOut that fails this is
 * anyone's claim, not the bid's swap. Remembered per event object.
 */
export function executesItsBid(out: TransferOut): ReturnType<typeof transferOutBid> {
  let known = executes.get(out);
  if (!known) {
    known = transferOutBid(out);
    executes.set(out, known);
  }
  return known;
}

/**
 * Whether `event` would be the swap of `facts` instead of its `out` (the caller checked that it executes its
 * bid): there is none yet, or `event` comes first in chain order. The same agreement locked twice is one
 * swap, the earlier lock: a decision waits for the source chain's clock to pass its TransferOut's block time
 * (judge.ts finish), so by then every earlier lock has been seen, and a replay chooses the same one.
 */
export function displacesOut(facts: SwapFacts, event: TransferOut): boolean {
  return facts.out === null || (!samePosition(facts.out, event) && byChainPosition(event, facts.out) < 0);
}

/**
 * Adds an event to the facts it belongs to (the caller decided it does); a duplicate changes nothing. A
 * TransferOut whose fields do not hash to the bid is never the swap, whatever its arrival order.
 */
export function addFact(facts: SwapFacts, event: ChainEvent): SwapFacts {
  const add = <T extends ChainEvent>(list: T[], e: T): T[] =>
    list.some((x) => samePosition(x, e)) ? list : [...list, e].sort(byChainPosition);
  switch (event.kind) {
    case 'TransferOut':
      return executesItsBid(event).executes && event.bidId === facts.bidId && displacesOut(facts, event)
        ? { ...facts, out: event }
        : facts;
    case 'TransferIn':
      return { ...facts, ins: add(facts.ins, event) };
    case 'ConfirmOut':
      return { ...facts, confirmOuts: add(facts.confirmOuts, event) };
    case 'RefundOut':
      return { ...facts, refundOuts: add(facts.refundOuts, event) };
    case 'ConfirmIn':
      return { ...facts, confirmIns: add(facts.confirmIns, event) };
    case 'RefundIn':
      return { ...facts, refundIns: add(facts.refundIns, event) };
    case 'Complaint':
      return { ...facts, complaints: add(facts.complaints, event) };
  }
}

/**
 * What the decision may know besides the swap's own events. Every answer is a function of the input topics
 * (clocks from chain.heights, DID names recorded with the verdict), so a replay decides identically.
 */
export interface JudgeEnv {
  /**
   * The newest block time of a chain's swap contract stream such that every event of that chain up to it
   * has been handled; undefined before its first height.
   */
  now(chainId: string): number | undefined;
  /**
   * Block time up to which every complaint of every reputation contract has been handled (the oldest of the
   * reputation streams' clocks); +Infinity when no chain has a reputation contract.
   */
  complaintsSeenThrough(): number | undefined;
  /** EVM chain id of a system chain id, from `chainClients[]`; undefined when the chain is not watched. */
  evmChainId(chainId: string): number | undefined;
  /** The system chain ids of every watched chain (`chainClients[]`): where a TransferOut can be seen. */
  swapChains(): readonly string[];
  /** DID names owned by a (lower-case) address; undefined when not known yet (the shell asks the service). */
  didNames(address: string): readonly string[] | undefined;
}

/** What a pending swap waits for. */
export type Wait =
  | { kind: 'clock'; chainId: string; until: number }
  | { kind: 'complaints'; until: number }
  | { kind: 'did'; address: string };
