/**
 * The facts of one swap as the classifier has seen them, and the outside knowledge its decision may use.
 * Everything here is plain data: the decision function (judge.ts) is pure over it.
 */
import {
  AgreementFieldError,
  agreementKey,
  agreementKeys,
  agreementOfComplaint,
  copyKeysOfLock,
  transferOutBid,
  transferOutBidForm,
} from '../../shared/otmoic/agreement.js';
import type { ChainEvent } from '../../topics/index.js';
import { differsButHashlock, inAnswerWindow, mismatchesOf } from './lock-terms.js';

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
   * TransferIns whose srcTransferId is the TransferOut's transferId (any sender), or that of another lock of the
   * same agreement, that can still matter to the decision (withTransferIn).
   */
  ins: readonly TransferIn[];
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

const executes = new WeakMap<TransferOut, ReturnType<typeof transferOutBidForm>>();
const EXECUTES = Object.freeze({ executes: true as const });
/**
 * Whether a TransferOut is a swap of the bid it names: its own fields hash to that bidId (spec §5, mapped by
 * shared/otmoic/agreement.ts). The contract does not check the bid, so a TransferOut that fails this is
 * anyone's claim, not the bid's swap. Remembered per event object.
 */
export function executesItsBid(out: TransferOut): ReturnType<typeof transferOutBid> {
  const found = bidFormOf(out);
  return found.executes ? EXECUTES : found;
}

/** transferOutBidForm of a TransferOut, remembered per event object (executesItsBid and the lock keys use it). */
function bidFormOf(out: TransferOut): ReturnType<typeof transferOutBidForm> {
  let known = executes.get(out);
  if (!known) {
    known = transferOutBidForm(out);
    executes.set(out, known);
  }
  return known;
}

/**
 * A TransferOut that executes its bid, as a lock of its agreement (agreementKey): what a complaint of the same
 * agreement under another bid is told apart from case 1 by (judge.ts). Recorded per key in
 * classifier_agreement_locks.
 */
export interface AgreementLock {
  bidId: string;
  chainId: string;
  transferId: string;
  blockTime: number;
}

const lockKeys = new WeakMap<TransferOut, { lock: readonly string[]; copy: readonly string[] }>();
/** Both kinds of keys of a lock, computed together from one reading of its agreement. Remembered per object. */
function keysOfLock(out: TransferOut): { lock: readonly string[]; copy: readonly string[] } {
  let keys = lockKeys.get(out);
  if (!keys) {
    const found = bidFormOf(out);
    if (!found.executes) keys = { lock: [], copy: [] };
    else {
      const lock = agreementKeys(found.agreement);
      keys = { lock, copy: copyKeysOfLock(found.agreement, out.lpSign, found.form === 'alias', lock) };
    }
    lockKeys.set(out, keys);
  }
  return keys;
}

/**
 * The agreement keys of a TransferOut that executes its bid (its sender form, and its receiver form when that is
 * another address); none for one that does not (foreign: it is no lock of any agreement). Remembered per object.
 */
export function lockKeysOf(out: TransferOut): readonly string[] {
  return keysOfLock(out).lock;
}

/**
 * The copy keys of a TransferOut that executes its bid (shared/otmoic/agreement.ts copyKeysOfLock: the agreement
 * with its lpSign, and its sender unless its bid leaves the sender out), one per key of lockKeysOf, in its order;
 * none for a foreign one. Locks of one agreement under any of its bids that share a copy key are one swap, the
 * earliest lock (engine route). Remembered per object.
 */
export function copyKeysOf(out: TransferOut): readonly string[] {
  return keysOfLock(out).copy;
}

const complaintKeys = new WeakMap<ComplaintEvent, string | null>();
/**
 * The agreement key of a complaint's agreement (its srcAddress as it is: a complaint has no alias); null when its
 * fields cannot be read as an agreement. Remembered per object.
 */
export function complaintKeyOf(event: ComplaintEvent): string | null {
  let key = complaintKeys.get(event);
  if (key === undefined) {
    try {
      key = agreementKey(agreementOfComplaint(event.complaint));
    } catch (err) {
      if (!(err instanceof AgreementFieldError)) throw err;
      key = null;
    }
    complaintKeys.set(event, key);
  }
  return key;
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
    case 'TransferIn': {
      const ins = withTransferIn(facts.ins, facts.out, event);
      return ins === facts.ins ? facts : { ...facts, ins };
    }
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
 * `ins` (canonical order) with `event` added, unless it cannot matter to the decision; `ins` itself when
 * nothing changes. Anyone can call transferIn naming any transfer, as often as they like: kept whole, a
 * griefer's TransferIns were scanned at every judgement of the swap, and read and written by every live batch
 * that touched it, so the work grew with the square of their number. What the decision reads of them (judge.ts,
 * cases 3 and 4):
 * - only those on the destination chain by T+2E (the same for every lock of the agreement);
 * - per named transfer and sender (whose DID names are asked at the first of its TransferIns asked about): the
 *   first, the first that matches the lock but for its hashlock, and the first that matches it whole.
 * So a TransferIn is dropped when an earlier one of the same sender naming the same transfer answers every
 * question it could, whatever comes later (covers), and drops the later ones it covers. Before the swap's
 * TransferOut is known nothing can be told, and every one is kept.
 */
export function withTransferIn(
  ins: readonly TransferIn[],
  out: TransferOut | null,
  event: TransferIn,
): readonly TransferIn[] {
  if (out !== null && !inAnswerWindow(out, event)) return ins;
  const index = indexOf(ins);
  const position = positionKey(event);
  if (index.positions.has(position)) return ins;
  const key = groupKey(event);
  const group = index.groups.get(key) ?? [];
  const dropped: TransferIn[] = [];
  if (out !== null) {
    for (const e of group) {
      const order = byChainPosition(e, event);
      if (order < 0 && covers(out, e, event)) return ins;
      if (order > 0 && covers(out, event, e)) dropped.push(e);
    }
  }
  const kept = dropped.length > 0 ? ins.filter((e) => !dropped.includes(e)) : ins;
  // In canonical order, which they mostly come in: the place is looked for from the end.
  let at = kept.length;
  while (at > 0 && byChainPosition(kept[at - 1]!, event) > 0) at--;
  const next = kept.slice(0, at);
  next.push(event);
  for (let i = at; i < kept.length; i++) next.push(kept[i]!);
  // The index goes to the new array (a caller keeps only the facts it gets back; the old one, if used again,
  // is indexed anew).
  for (const e of dropped) index.positions.delete(positionKey(e));
  index.positions.add(position);
  index.groups.set(key, [...group.filter((e) => !dropped.includes(e)), event]);
  if (index.answers !== undefined && index.answers.out === out) {
    const answers = index.answers.list.filter((e) => !dropped.includes(e));
    if (answersTo(out, event)) {
      let place = answers.length;
      while (place > 0 && byChainPosition(answers[place - 1]!, event) > 0) place--;
      answers.splice(place, 0, event);
    }
    index.answers.list = answers;
  } else index.answers = undefined;
  indexes.delete(ins);
  indexes.set(next, index);
  return next;
}

/**
 * The TransferIns of `ins` that name `out` on its destination chain by T+2E and match it whole, in canonical
 * order: those the LP's answer is looked for among at every judgement.
 */
export function answersOf(ins: readonly TransferIn[], out: TransferOut): readonly TransferIn[] {
  const index = indexOf(ins);
  if (index.answers?.out !== out) index.answers = { out, list: ins.filter((e) => answersTo(out, e)) };
  return index.answers.list;
}

/**
 * Whether a ConfirmIn / RefundIn names one of answersOf (or the TransferOut is not known): the decision reads
 * the confirms and refunds of the LP's answer only. The others can never matter to a caller that adds them
 * only after the TransferIn they name, and a TransferIn only once the lock it names is the swap's or never will
 * be (the engine: they join a swap through it, and one naming a lock not known yet waits as an orphan).
 */
export function confirmsAnAnswer(
  facts: SwapFacts,
  event: EventOf<'ConfirmIn'> | EventOf<'RefundIn'>,
): boolean {
  return (
    facts.out === null ||
    answersOf(facts.ins, facts.out).some(
      (e) => e.transferId === event.transferId && e.chainId === event.chainId,
    )
  );
}

const answersTo = (out: TransferOut, e: TransferIn) =>
  e.srcTransferId === out.transferId && inAnswerWindow(out, e) && mismatchesOf(out, e).length === 0;

/**
 * A kept TransferIns array's events by position (duplicates), by sender group (what a new one is compared
 * with), and those that match the lock, so that neither adding one nor judging looks at all of them.
 */
interface InsIndex {
  positions: Set<string>;
  groups: Map<string, TransferIn[]>;
  /** answersOf, for the lock it was taken for. */
  answers?: { out: TransferOut; list: TransferIn[] };
}
const indexes = new WeakMap<readonly TransferIn[], InsIndex>();
const positionKey = (e: ChainEvent) => `${e.chainId}\n${e.txHash}\n${e.logIndex}`;
/** The named transfer, the chain, and the sender as its DID names are asked for (lower-case). */
const groupKey = (e: TransferIn) => `${e.srcTransferId}\n${e.chainId}\n${e.sender.toLowerCase()}`;

function indexOf(ins: readonly TransferIn[]): InsIndex {
  let index = indexes.get(ins);
  if (!index) {
    index = { positions: new Set(), groups: new Map() };
    for (const e of ins) {
      index.positions.add(positionKey(e));
      const key = groupKey(e);
      const group = index.groups.get(key);
      if (group) group.push(e);
      else index.groups.set(key, [e]);
    }
    indexes.set(ins, index);
  }
  return index;
}

/**
 * Whether `earlier` (the same sender's, naming the same transfer) answers every question of the decision that
 * `later` could, now and after any event to come. Naming the swap's lock: it matches the lock as well (whole,
 * but for the hashlock, or not), the lock's terms being fixed; an earlier lock of the agreement that comes
 * later makes it another lock's, which the next case covers. Naming another transfer, the decision asks only
 * whether it matches the agreement but for the hashlock (the LP answered another lock), unless that transfer
 * is a lock still to come that takes the swap (an earlier copy): then with the same hashlock. The locks of one
 * agreement carry the same terms but for the hashlock (they hash to one bid, or share a copy key: one agreement).
 */
function covers(out: TransferOut, earlier: TransferIn, later: TransferIn): boolean {
  const a = mismatchesOf(out, earlier);
  const b = mismatchesOf(out, later);
  if (later.srcTransferId === out.transferId) return matchRank(a) >= matchRank(b);
  return (
    !differsButHashlock(b) ||
    (differsButHashlock(a) && earlier.hashlock.toLowerCase() === later.hashlock.toLowerCase())
  );
}

/** 2: matches the lock whole, 1: but for the hashlock, 0: not. */
const matchRank = (differences: readonly string[]) =>
  differences.length === 0 ? 2 : differsButHashlock(differences) ? 1 : 0;

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
  /**
   * Every lock seen of the agreement with this key (agreementKey), under any bid. Complete for a chain up to its
   * clock: a lock is recorded when its TransferOut is handled.
   */
  agreementLocks(key: string): readonly AgreementLock[];
}

/** What a pending swap waits for. */
export type Wait =
  | { kind: 'clock'; chainId: string; until: number }
  | { kind: 'complaints'; until: number }
  | { kind: 'did'; address: string };
