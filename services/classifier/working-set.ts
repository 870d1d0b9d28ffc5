/**
 * The rows one classifier transaction may touch, read in a fixed number of statements before the decisions
 * and written back in a fixed number after them, whatever the batch size. The engine decides over this
 * in-memory view exactly as it would over the tables row by row: the reads cover every row any message of
 * the batch can reach (its swaps, the orphans and in-links it can join, the heights it can release, and the
 * pending swaps a clock can reach within the batch).
 */
import { nulAsText } from '../../shared/db/nul.js';
import { withTransaction, type Pool, type PoolClient, type Queryable } from '../../shared/db/pool.js';
import type { ChainEvent, ChainHeight, SwapVerdict, Violation } from '../../topics/index.js';
import {
  byChainPosition,
  complaintKeyOf,
  copyKeysOf,
  emptyFacts,
  type AgreementLock,
  type SwapFacts,
  type TransferOut,
} from './facts.js';
import { fromJsonb, jsonbArrayText, jsonbText } from './jsonb-nul.js';
import { MinHeap } from './min-heap.js';
import { orphanExpiry } from './orphan-retention.js';
import type { ClassifierTables } from './tables.js';
import { WaitIndex } from './wait-index.js';

export type Stream = 'swap' | 'reputation';
export const clockKey = (chainId: string, stream: Stream) => `${chainId}/${stream}`;

export type Wait =
  | { kind: 'clock'; chainId: string; until: number }
  | { kind: 'complaints'; until: number }
  | { kind: 'did'; address: string };

export interface StoredSwap {
  facts: SwapFacts;
  decided: boolean;
  wait: Wait | null;
  waitingFor: string | null;
  /** Written back at the end of the transaction. */
  dirty: boolean;
}

interface Orphan {
  eventId: string;
  ref: string;
  event: ChainEvent;
  /** A row of the table (deleted when adopted), or new in this transaction (inserted unless adopted). */
  stored: boolean;
  adopted: boolean;
  /** Removed once every watched chain's clock is past this block time (orphan-retention.ts). */
  expiresAt: number;
  /** Removed by that rule in this transaction (resident: since it was kept). */
  expired?: boolean;
}

/** A TransferOut that is not the swap of the bid it names (tables.ts ignoredOutsDdl). */
export interface IgnoredOut {
  eventId: string;
  reason: 'foreign' | 'copy';
  detail: string;
  event: TransferOut;
}

export interface HeldHeight {
  chainId: string;
  stream: Stream;
  height: number;
  blockTime: number;
  lastEventId: string;
  stored: boolean;
}

/**
 * A chain event this group dead-lettered, never applied: its stream's clock stays below its block until it is
 * (tables.ts missingEventsDdl). `block` 0: a message that did not decode holds its chain from the start.
 */
export interface MissingEvent {
  chainId: string;
  stream: Stream;
  eventId: string;
  block: number;
}

/** What the batch may read: derived from its messages before any decision. */
export interface ReadPlan {
  /** TransferOut / Complaint bids. */
  bids: Set<string>;
  /** Out transfer ids named by TransferIn / ConfirmOut / RefundOut. */
  outTransferIds: Set<string>;
  /** In transfer ids named by ConfirmIn / RefundIn. */
  inTransferIds: Set<string>;
  /** Transfer ids whose orphans a TransferOut / TransferIn adopts. */
  orphanRefs: Set<string>;
  /** Event ids of the batch (heights held for them are released). */
  eventIds: Set<string>;
  /** lastEventIds of the batch's heights (were they handled before?). */
  heightEventIds: Set<string>;
  /** Newest block time per chain stream the batch's heights carry. */
  heightTimes: Map<string, number>;
  /** Agreement keys of the batch's complaints (their locks under any bid are read). */
  complaintKeys: Set<string>;
  /** Copy keys of the batch's TransferOuts (the locks of the same agreement and LP consent, and their swaps). */
  copyKeys: Set<string>;
}

export function readPlan(
  events: ReadonlyArray<{ id: string; event: ChainEvent }>,
  heights: readonly ChainHeight[],
): ReadPlan {
  const plan: ReadPlan = {
    bids: new Set(),
    outTransferIds: new Set(),
    inTransferIds: new Set(),
    orphanRefs: new Set(),
    eventIds: new Set(),
    heightEventIds: new Set(),
    heightTimes: new Map(),
    complaintKeys: new Set(),
    copyKeys: new Set(),
  };
  for (const { id, event } of events) {
    plan.eventIds.add(id);
    switch (event.kind) {
      case 'TransferOut':
        plan.bids.add(event.bidId);
        plan.orphanRefs.add(event.transferId);
        for (const key of copyKeysOf(event)) plan.copyKeys.add(key);
        break;
      case 'TransferIn':
        plan.outTransferIds.add(event.srcTransferId);
        plan.orphanRefs.add(event.transferId);
        break;
      case 'ConfirmOut':
      case 'RefundOut':
        plan.outTransferIds.add(event.transferId);
        break;
      case 'ConfirmIn':
      case 'RefundIn':
        plan.inTransferIds.add(event.transferId);
        break;
      case 'Complaint': {
        plan.bids.add(event.bidId);
        const key = complaintKeyOf(event);
        if (key !== null) plan.complaintKeys.add(key);
        break;
      }
    }
  }
  for (const h of heights) {
    if (h.lastEventId !== null) plan.heightEventIds.add(h.lastEventId);
    const key = clockKey(h.chainId, h.stream);
    plan.heightTimes.set(key, Math.max(plan.heightTimes.get(key) ?? 0, h.blockTimestamp));
  }
  return plan;
}

interface SwapRow {
  bid_id: string;
  facts: SwapFacts;
  status: 'pending' | 'decided';
  wait_kind: Wait['kind'] | null;
  wait_chain: string | null;
  wait_until: string | null;
  wait_address: string | null;
  waiting_for: string | null;
}

/**
 * The held heights of one chain stream, lowest first. A replay holds tens of thousands at once (heights run
 * ahead of events), and each height asks for the lowest: heights are held mostly in rising order and released
 * mostly from the low end, so they sit in a sorted array read from a moving head, removals marked, not spliced.
 */
class HeldQueue {
  private items: HeldHeight[] = [];
  private head = 0;
  private readonly live = new Set<HeldHeight>();

  add(h: HeldHeight): void {
    this.live.add(h);
    const last = this.items.at(-1);
    if (this.head === this.items.length || last === undefined || last.height <= h.height) {
      this.items.push(h);
      return;
    }
    let lo = this.head;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.items[mid]!.height <= h.height) lo = mid + 1;
      else hi = mid;
    }
    this.items.splice(lo, 0, h);
  }

  delete(h: HeldHeight): void {
    this.live.delete(h);
  }

  lowest(): HeldHeight | undefined {
    while (this.head < this.items.length && !this.live.has(this.items[this.head]!)) this.head++;
    if (this.head > 1_024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return this.items[this.head];
  }
}

export class WorkingSet {
  /**
   * Metric updates of this working set's decisions, applied once its transaction committed: a batch that rolls
   * back is delivered again, and counting it then too counted each of its verdicts twice.
   */
  private readonly afterCommit: Array<() => void> = [];
  readonly swaps = new Map<string, StoredSwap>();
  /** The pending swaps that wait for something: what a clock move or a DID answer looks through. */
  private readonly waiting = new WaitIndex();
  private readonly byOut = new Map<string, string>();
  /**
   * By the transfer they name, oldest first. A set, not an array: anyone can send many naming one transfer,
   * and removing each by its expiry from an array copied the rest (quadratic; orphan-retention.test.ts).
   */
  private readonly orphans = new Map<string, Set<Orphan>>();
  /** The orphans in `orphans`, by expiry: what a clock move removes (orphan-retention.ts). */
  private readonly orphansByExpiry = new MinHeap<Orphan>((o) => o.expiresAt);
  /** The orphan clock this transaction reached (removeExpiredOrphans): stored orphans expired below it go. */
  private orphanClock: number | undefined;
  /** Orphans removed by their expiry and not counted yet (takeOrphansRemoved); live: those never stored. */
  private orphansRemoved = 0;
  private readonly inLinks = new Map<string, string>();
  /** The links that are another lock of the swap's agreement (the others are TransferIns'). */
  private readonly lockLinks = new Set<string>();
  private readonly newLinks: Array<[id: string, bid: string, lock: boolean]> = [];
  readonly clocks = new Map<string, number>();
  private readonly clockHeights = new Map<string, number>();
  private readonly dirtyClocks = new Set<string>();
  private readonly held = new Map<string, HeldHeight[]>();
  private readonly released: string[] = [];
  /** Held in this transaction and not released in it (a set: a replay may hold tens of thousands at once). */
  private readonly newHeld = new Set<HeldHeight>();
  /** Dead-lettered events not applied yet, by chain stream (clockKey): a small table, read whole. */
  private readonly missing = new Map<string, MissingEvent[]>();
  /** Missing events applied in this transaction: their rows are deleted. */
  private readonly arrived: string[] = [];
  /** Event ids handled before this transaction, among those the batch's heights wait for. */
  private readonly handledBefore = new Set<string>();
  readonly verdicts: SwapVerdict[] = [];
  readonly violations: Violation[] = [];
  /** TransferOuts set aside in this transaction (resident: since the last write). */
  private readonly ignored: IgnoredOut[] = [];
  /** Locks of agreements by agreement key (tables.ts agreementLocksDdl): those read, and those of this batch. */
  private readonly locks = new Map<string, AgreementLock[]>();
  /** The keys whose locks were read (resident: every key is known, nothing is read). */
  private readonly locksRead = new Set<string>();
  /** Locks recorded in this transaction (resident: since the last write), by key, with their copy keys. */
  private readonly newLocks: Array<[key: string, lock: AgreementLock, copyKey: string]> = [];
  /** Locks by copy key (facts.ts copyKeysOf): those read, and those of this batch. */
  private readonly copyLocks = new Map<string, AgreementLock[]>();
  /** The copy keys whose locks (and their bids' swaps) were read (resident: every one is known). */
  private readonly copyKeysRead = new Set<string>();
  /** Swaps whose rows go (a later lock of an agreement that became a copy of an earlier one: dropSwap). */
  private readonly droppedSwaps = new Set<string>();
  /** Links moved from a swap to another (the first bid to the second: repointLinks), in order. */
  private readonly repointed: Array<[from: string, to: string]> = [];

  /** Resident only: every input id handled so far (a resident set reads nothing back). */
  readonly processed = new Set<string>();
  private readonly decidedSinceWrite = new Set<string>();

  private constructor(
    private readonly tables: ClassifierTables,
    /** Lives across batches in a process that owns its tables (a replay): read nothing, write decisions. */
    readonly resident = false,
  ) {}

  /** An empty set for a replay: its tables start empty and only this process writes them. */
  static resident(tables: ClassifierTables): WorkingSet {
    return new WorkingSet(tables, true);
  }

  /** `update` once the decisions of this set are committed (runCommitted). */
  whenCommitted(update: () => void): void {
    this.afterCommit.push(update);
  }

  /** Their transaction committed (or, resident, their batch was written): the updates waiting for it run. */
  runCommitted(): void {
    for (const update of this.afterCommit.splice(0)) update();
  }

  /**
   * Reads what the batch can reach. `reputationChains`: chains whose complaint clocks bound the complaint
   * waits (see boundOfComplaints). Call under the group's lock.
   */
  static async read(
    tx: PoolClient,
    tables: ClassifierTables,
    group: string,
    plan: ReadPlan,
    reputationChains: readonly string[],
    /** Every chain stream the classifier follows (chain id, stream). */
    streams: ReadonlyArray<readonly [string, Stream]>,
  ): Promise<WorkingSet> {
    const w = new WorkingSet(tables);
    await w.readClocks(tx);
    await w.readMissing(tx);
    // The operator released these (npm run classifier-holds): as if they had come, heights held for them go.
    for (const id of w.releasedMissing) plan.eventIds.add(id);
    // The links of TransferIns (their ConfirmIn / RefundIn name them), and of a swap's other locks of its
    // agreement (a TransferIn or ConfirmOut may name one: the engine's route).
    if (plan.inTransferIds.size > 0 || plan.outTransferIds.size > 0) {
      const { rows } = await tx.query<{ in_transfer_id: string; bid_id: string; lock: boolean }>(
        `SELECT in_transfer_id, bid_id, lock FROM ${tables.inLinks} WHERE in_transfer_id = ANY($1)`,
        [[...plan.inTransferIds, ...plan.outTransferIds]],
      );
      for (const r of rows) {
        w.inLinks.set(r.in_transfer_id, r.bid_id);
        if (r.lock) w.lockLinks.add(r.in_transfer_id);
        plan.bids.add(r.bid_id);
      }
    }
    if (plan.orphanRefs.size > 0) {
      // Transitively: an orphan TransferIn brings the orphans that name its own transfer id.
      const { rows } = await tx.query<{
        event_id: string;
        ref: string;
        event: ChainEvent;
        expires_at: string;
      }>(
        `WITH RECURSIVE o AS (
           SELECT event_id, ref, event, expires_at FROM ${tables.orphans} WHERE ref = ANY($1)
           UNION
           SELECT c.event_id, c.ref, c.event, c.expires_at FROM ${tables.orphans} c JOIN o
             ON o.event->>'kind' = 'TransferIn' AND c.ref = o.event->>'transferId'
         ) SELECT event_id, ref, event, expires_at FROM o`,
        [[...plan.orphanRefs]],
      );
      for (const r of rows)
        w.keepOrphan({
          eventId: r.event_id,
          ref: r.ref,
          event: fromJsonb(r.event),
          stored: true,
          adopted: false,
          expiresAt: Number(r.expires_at),
        });
    }
    // Held heights: those the batch's events release, and of every chain stream the lowest one they do not,
    // which keeps every later height of the stream held (see heldBelow): after the batch's releases it is the
    // stream's lowest held height. One index probe a stream, however many are held.
    {
      const { rows } = await tx.query<{
        chain_id: string;
        stream: Stream;
        height: string;
        block_time: string;
        last_event_id: string;
      }>(
        `SELECT chain_id, stream, height, block_time, last_event_id FROM ${tables.pendingHeights}
          WHERE last_event_id = ANY($1)
         UNION
         SELECT p.chain_id, p.stream, p.height, p.block_time, p.last_event_id
           FROM unnest($2::text[], $3::text[]) AS s(chain_id, stream)
           CROSS JOIN LATERAL (
             SELECT * FROM ${tables.pendingHeights} h
              WHERE h.chain_id = s.chain_id AND h.stream = s.stream AND h.last_event_id <> ALL($1)
              ORDER BY h.height LIMIT 1) p`,
        [[...plan.eventIds], streams.map(([chainId]) => chainId), streams.map(([, stream]) => stream)],
      );
      for (const r of rows) {
        w.hold({
          chainId: r.chain_id,
          stream: r.stream,
          height: Number(r.height),
          blockTime: Number(r.block_time),
          lastEventId: r.last_event_id,
          stored: true,
        });
        if (!plan.eventIds.has(r.last_event_id)) continue;
        const key = clockKey(r.chain_id, r.stream);
        plan.heightTimes.set(key, Math.max(plan.heightTimes.get(key) ?? 0, Number(r.block_time)));
      }
    }
    if (plan.heightEventIds.size > 0) {
      // Handled, or released by the operator (it will never apply): a height naming a released event as its
      // stream's last one (the Connector's chunks after it had no events) was otherwise held for it for ever,
      // and every later height of the stream behind it. Released ids are stored as dead-lettered (\u0000).
      const ids = [...plan.heightEventIds];
      const { rows } = await tx.query<{ event_id: string }>(
        `SELECT event_id FROM processed_events WHERE consumer = $1 AND event_id = ANY($2)
         UNION
         SELECT h.id FROM unnest($2::text[], $3::text[]) AS h(id, stored)
          WHERE EXISTS (SELECT 1 FROM ${tables.missingEvents} m WHERE m.event_id = h.stored AND m.released)`,
        [group, ids, ids.map(nulAsText)],
      );
      for (const r of rows) w.handledBefore.add(r.event_id);
    }
    await w.readCopyLocks(tx, plan);
    // Swaps: those named, and the pending ones a clock can reach within this batch (no clock moves past the
    // newest height the batch carries or releases).
    const clockBounds: Array<[string, number]> = [];
    for (const [key, time] of plan.heightTimes) {
      const [chainId, stream] = splitClockKey(key);
      if (stream === 'swap') clockBounds.push([chainId, Math.max(time, w.clocks.get(key) ?? 0)]);
    }
    const complaintsBound = boundOfComplaints(reputationChains, w.clocks, plan.heightTimes);
    // One statement, each branch on its own index (an OR of them would scan the table).
    const columns = 'bid_id, facts, status, wait_kind, wait_chain, wait_until, wait_address, waiting_for';
    const { rows } = await tx.query<SwapRow>(
      `SELECT ${columns} FROM ${tables.swaps} WHERE bid_id = ANY($1)
       UNION ALL SELECT ${columns} FROM ${tables.swaps} WHERE out_transfer_id = ANY($2)
       UNION ALL SELECT ${columns.replace(/(\w+)/g, 's.$1')} FROM unnest($3::text[], $4::bigint[]) AS b(chain, until)
         JOIN ${tables.swaps} s ON s.status = 'pending' AND s.wait_kind = 'clock' AND s.wait_chain = b.chain
                               AND s.wait_until <= b.until
       UNION ALL SELECT ${columns} FROM ${tables.swaps}
         WHERE status = 'pending' AND wait_kind = 'complaints' AND wait_until <= $5`,
      [
        [...plan.bids],
        [...plan.outTransferIds],
        clockBounds.map(([c]) => c),
        clockBounds.map(([, t]) => t),
        complaintsBound,
      ],
    );
    for (const r of rows) w.keepSwap(r);
    await w.readLocks(tx, plan.complaintKeys);
    return w;
  }

  /**
   * The locks that share a copy key with the batch's TransferOuts, under any bid: their bids' swaps are read
   * with the others (`plan.bids`), one of them holds the agreement's swap (agreementSwap). One statement.
   */
  private async readCopyLocks(tx: PoolClient, plan: ReadPlan): Promise<void> {
    if (plan.copyKeys.size === 0) return;
    const rows = await this.lockRows(tx, 'copy_key', plan.copyKeys);
    for (const key of plan.copyKeys) this.copyKeysRead.add(key);
    for (const { key, lock } of rows) {
      plan.bids.add(lock.bidId);
      keepIn(this.copyLocks, key, lock);
    }
  }

  /**
   * The locks of the agreements of the batch's complaints (`keys`) and of every pending swap read with
   * complaints (a complaint-only one asks them; one whose lock becomes a copy keeps only its complaints): what
   * their judgement asks (JudgeEnv.agreementLocks). One statement.
   */
  private async readLocks(tx: PoolClient, keys: ReadonlySet<string>): Promise<void> {
    const wanted = new Set(keys);
    for (const swap of this.swaps.values()) {
      if (swap.decided) continue;
      for (const c of swap.facts.complaints) {
        const key = complaintKeyOf(c);
        if (key !== null) wanted.add(key);
      }
    }
    if (wanted.size === 0) return;
    const rows = await this.lockRows(tx, 'agreement_key', wanted);
    for (const key of wanted) this.locksRead.add(key);
    for (const { key, lock } of rows) this.keepLock(key, lock);
  }

  /** The rows of classifier_agreement_locks whose `column` is one of `keys`, each with that key. One statement. */
  private async lockRows(
    tx: PoolClient,
    column: 'agreement_key' | 'copy_key',
    keys: ReadonlySet<string>,
  ): Promise<Array<{ key: string; lock: AgreementLock }>> {
    const { rows } = await tx.query<{
      key: string;
      bid_id: string;
      chain_id: string;
      transfer_id: string;
      block_time: string;
    }>(
      `SELECT ${column} AS key, bid_id, chain_id, transfer_id, block_time FROM ${this.tables.agreementLocks}
        WHERE ${column} = ANY($1)`,
      [[...keys]],
    );
    return rows.map((r) => ({
      key: r.key,
      lock: {
        bidId: r.bid_id,
        chainId: r.chain_id,
        transferId: r.transfer_id,
        blockTime: Number(r.block_time),
      },
    }));
  }

  /** Keeps a lock in memory under its key; false when it is known already. */
  private keepLock(key: string, lock: AgreementLock): boolean {
    return keepIn(this.locks, key, lock);
  }

  /**
   * Records a TransferOut that executes its bid as a lock of its agreement, under each of its keys, with the copy
   * key of each (same order: facts.ts lockKeysOf, copyKeysOf).
   */
  recordLock(keys: readonly string[], copyKeys: readonly string[], lock: AgreementLock): void {
    keys.forEach((key, i) => {
      const copyKey = copyKeys[i]!;
      keepIn(this.copyLocks, copyKey, lock);
      if (this.keepLock(key, lock)) this.newLocks.push([key, lock, copyKey]);
    });
  }

  /**
   * The swap that holds the lock of the agreement (the same copy key: facts.ts copyKeysOf) under a bid other than
   * `exceptBid`: the swap of the earliest of its locks seen, or none. At most one such swap holds a lock of a copy
   * key (the engine makes every other lock of it a copy). Live, the copy keys of the batch's TransferOuts were
   * read with their bids' swaps: any other is an error, never an empty answer.
   */
  agreementSwap(copyKeys: readonly string[], exceptBid: string): StoredSwap | undefined {
    let found: StoredSwap | undefined;
    for (const key of copyKeys) {
      if (!this.resident && !this.copyKeysRead.has(key))
        throw new Error(`the locks of copy key ${key} were not read for this transaction`);
      for (const lock of this.copyLocks.get(key) ?? []) {
        if (lock.bidId === exceptBid) continue;
        const swap = this.swaps.get(lock.bidId);
        if (swap?.facts.out?.transferId !== lock.transferId) continue;
        // Two only when copy keys chain without being one (a lock sharing its sender key with one swap's lock and
        // its receiver-form key with another's, both the user's): the one of the earlier lock.
        if (found === undefined || earlierLock(swap, found)) found = swap;
      }
    }
    return found;
  }

  /**
   * The swap's row goes (its lock became a copy of another's swap, and nothing else is its own): live deleted
   * with the transaction, resident forgotten.
   */
  dropSwap(bid: string): void {
    const swap = this.swaps.get(bid);
    if (swap === undefined) return;
    this.swaps.delete(bid);
    this.waiting.set(bid, null);
    this.decidedSinceWrite.delete(bid);
    if (swap.facts.out && this.byOut.get(swap.facts.out.transferId) === bid)
      this.byOut.delete(swap.facts.out.transferId);
    this.droppedSwaps.add(bid);
  }

  /** The lock `transferId` is no longer a swap's own (it became a copy: it is linked to the swap as a lock). */
  forgetOut(transferId: string): void {
    this.byOut.delete(transferId);
  }

  /**
   * Every link to swap `from` (its TransferIns', its copies') now names swap `to`: `from`'s lock became a copy of
   * `to`'s, and what joined it joins `to`. In memory at once, in the table with the transaction (every row of
   * `from`, read or not).
   */
  repointLinks(from: string, to: string): void {
    for (const [id, bid] of this.inLinks) if (bid === from) this.inLinks.set(id, to);
    for (const link of this.newLinks) if (link[1] === from) link[1] = to;
    this.repointed.push([from, to]);
  }

  /**
   * Every lock known of the agreement with this key. Live, only the keys read for the batch are complete (and
   * the judgements of the batch ask only those): any other is an error, never an empty answer.
   */
  agreementLocks(key: string): readonly AgreementLock[] {
    if (!this.resident && !this.locksRead.has(key))
      throw new Error(`the locks of agreement ${key} were not read for this transaction`);
    return this.locks.get(key) ?? [];
  }

  /** The pending swaps waiting for the DID names of any of `addresses` (answers came). */
  static async readDidWaiters(
    tx: PoolClient,
    tables: ClassifierTables,
    addresses: readonly string[],
  ): Promise<WorkingSet> {
    const w = new WorkingSet(tables);
    await w.readClocks(tx);
    const { rows } = await tx.query<SwapRow>(
      `SELECT bid_id, facts, status, wait_kind, wait_chain, wait_until, wait_address, waiting_for
         FROM ${tables.swaps} WHERE status = 'pending' AND wait_kind = 'did' AND wait_address = ANY($1::text[])`,
      [addresses.map((a) => a.toLowerCase())],
    );
    for (const r of rows) w.keepSwap(r);
    await w.readLocks(tx, new Set());
    return w;
  }

  /** Every chain stream's clock (a small table, read whole). */
  private async readClocks(tx: PoolClient): Promise<void> {
    const { rows } = await tx.query<{ chain_id: string; stream: Stream; height: string; block_time: string }>(
      `SELECT chain_id, stream, height, block_time FROM ${this.tables.clocks}`,
    );
    for (const r of rows) {
      this.clocks.set(clockKey(r.chain_id, r.stream), Number(r.block_time));
      this.clockHeights.set(clockKey(r.chain_id, r.stream), Number(r.height));
    }
  }

  /**
   * Missing events the operator released and the engine has not let go yet, read with the table: they hold
   * nothing now, the heights held for them are released, and their rows become tombstones (write).
   */
  readonly releasedMissing: string[] = [];

  private async readMissing(tx: PoolClient): Promise<void> {
    const { rows } = await tx.query<{
      chain_id: string;
      stream: Stream;
      event_id: string;
      block_number: string;
      released: boolean;
    }>(
      `SELECT chain_id, stream, event_id, block_number, released FROM ${this.tables.missingEvents}
        WHERE NOT release_applied`,
    );
    for (const r of rows) {
      if (!r.released)
        this.addMissing({
          chainId: r.chain_id,
          stream: r.stream,
          eventId: r.event_id,
          block: Number(r.block_number),
        });
      else if (!this.releasedMissing.includes(r.event_id)) this.releasedMissing.push(r.event_id);
    }
  }

  /** A dead-lettered event of the stream (resident: told by the bus; live: read from the table). */
  addMissing(m: MissingEvent): void {
    const key = clockKey(m.chainId, m.stream);
    const list = this.missing.get(key);
    if (list?.some((x) => x.eventId === m.eventId)) return;
    if (list) list.push(m);
    else this.missing.set(key, [m]);
  }

  /** The lowest dead-lettered event of a chain stream at or below `height`: the clock must not pass it. */
  missingThrough(chainId: string, stream: Stream, height: number): MissingEvent | undefined {
    let lowest: MissingEvent | undefined;
    for (const m of this.missing.get(clockKey(chainId, stream)) ?? [])
      if (m.block <= height && (lowest === undefined || m.block < lowest.block)) lowest = m;
    return lowest;
  }

  /** `eventId` was applied: it holds no clock any more. False if it was not missing. */
  missingArrived(eventId: string): boolean {
    // Called for every event applied: no list is copied for the many that are not missing.
    let found = false;
    for (const [key, list] of this.missing) {
      const at = list.findIndex((m) => m.eventId === eventId);
      if (at < 0) continue;
      found = true;
      list.splice(at, 1); // at most once a stream (addMissing)
      if (list.length === 0) this.missing.delete(key);
    }
    if (found && !this.resident) this.arrived.push(eventId);
    return found;
  }

  /** A row read twice (named, and due) is the same row: the first copy is kept. */
  private keepSwap(r: SwapRow): void {
    if (this.swaps.has(r.bid_id)) return;
    const wait: Wait | null =
      r.wait_kind === 'clock'
        ? { kind: 'clock', chainId: r.wait_chain!, until: Number(r.wait_until) }
        : r.wait_kind === 'complaints'
          ? { kind: 'complaints', until: Number(r.wait_until) }
          : r.wait_kind === 'did'
            ? { kind: 'did', address: r.wait_address! }
            : null;
    const facts = fromJsonb(r.facts);
    this.swaps.set(r.bid_id, {
      facts,
      decided: r.status === 'decided',
      wait,
      waitingFor: r.waiting_for,
      dirty: false,
    });
    if (r.status === 'pending' && wait) this.waiting.set(r.bid_id, wait);
    if (facts.out) this.byOut.set(facts.out.transferId, r.bid_id);
  }

  private keepOrphan(o: Orphan): void {
    const list = this.orphans.get(o.ref);
    if (list) list.add(o);
    else this.orphans.set(o.ref, new Set([o]));
    this.orphansByExpiry.push(o);
  }

  /** chain/stream/height of every held height (in memory: read, or held in this transaction). */
  private readonly heldKeys = new Set<string>();
  /** Held heights by chain stream (clockKey), lowest first. */
  private readonly heldByStream = new Map<string, HeldQueue>();

  private hold(h: HeldHeight): void {
    const key = clockKey(h.chainId, h.stream);
    this.heldKeys.add(`${key}/${h.height}`);
    const list = this.held.get(h.lastEventId);
    if (list) list.push(h);
    else this.held.set(h.lastEventId, [h]);
    let byStream = this.heldByStream.get(key);
    if (!byStream) this.heldByStream.set(key, (byStream = new HeldQueue()));
    byStream.add(h);
  }

  /**
   * The lowest height of a chain stream still held (for an event not handled), if it is below `height`.
   * Every later height of the stream waits behind it: the clock says every event up to it was handled, so it
   * must not pass an event that never came (one dead-lettered, until it is redriven), although later events
   * of the chain did. An event dead-lettered in the middle of its chunk is known by missingThrough.
   */
  heldBelow(chainId: string, stream: Stream, height: number): HeldHeight | undefined {
    const lowest = this.heldByStream.get(clockKey(chainId, stream))?.lowest();
    return lowest !== undefined && lowest.height < height ? lowest : undefined;
  }

  // --- reads and writes of the decisions (in memory) ---

  swap(bid: string): StoredSwap | undefined {
    return this.swaps.get(bid);
  }

  /**
   * The swap whose TransferOut, or another lock of its agreement (linked as a lock), has this transfer id; never
   * through a TransferIn's link: what names a TransferIn is no event of a lock.
   */
  swapByOut(outTransferId: string): StoredSwap | undefined {
    const bid =
      this.byOut.get(outTransferId) ??
      (this.lockLinks.has(outTransferId) ? this.inLinks.get(outTransferId) : undefined);
    return bid === undefined ? undefined : this.swaps.get(bid);
  }

  putSwap(swap: StoredSwap): void {
    swap.dirty = true;
    this.droppedSwaps.delete(swap.facts.bidId);
    if (swap.decided && this.resident) this.decidedSinceWrite.add(swap.facts.bidId);
    this.swaps.set(swap.facts.bidId, swap);
    this.waiting.set(swap.facts.bidId, swap.decided ? null : swap.wait);
    if (swap.facts.out) this.byOut.set(swap.facts.out.transferId, swap.facts.bidId);
  }

  linkedBid(inTransferId: string): string | undefined {
    return this.inLinks.get(inTransferId);
  }

  /** Links transfer ids to a swap: TransferIns' (for their ConfirmIn / RefundIn), or with `lock` other locks'. */
  link(transferIds: readonly string[], bid: string, lock = false): void {
    for (const id of transferIds) {
      if (this.inLinks.has(id)) continue;
      this.inLinks.set(id, bid);
      if (lock) this.lockLinks.add(id);
      this.newLinks.push([id, bid, lock]);
    }
  }

  /**
   * Keeps an event until the swap it names is known (null: it joins no swap now), or until every watched chain's
   * clock is past its expiry (orphan-retention.ts): `clock` is that clock now (orphanClock); one already past it
   * is not kept at all.
   */
  addOrphan(eventId: string, ref: string, event: ChainEvent, clock: number | undefined): null {
    const expiresAt = orphanExpiry(event);
    if (clock !== undefined && expiresAt < clock) {
      this.orphansRemoved++;
      return null;
    }
    this.keepOrphan({ eventId, ref, event, stored: false, adopted: false, expiresAt });
    return null;
  }

  /**
   * Every watched chain's clock is at `clock` at least (orphanClock): the orphans that expire before it can no
   * longer be adopted, and go (orphan-retention.ts). Those in memory at once, so the rest of the batch decides
   * as a replay does; the stored ones with the transaction (write), in one statement on the expiry index.
   */
  removeExpiredOrphans(clock: number): void {
    this.orphanClock = Math.max(this.orphanClock ?? clock, clock);
    for (const o of this.orphansByExpiry.takeWhileBelow(clock)) {
      if (o.adopted || o.expired) continue;
      o.expired = true;
      const list = this.orphans.get(o.ref);
      if (list?.delete(o) && list.size === 0) this.orphans.delete(o.ref);
      // A stored one is counted by the statement that deletes its row (write).
      if (!o.stored) this.orphansRemoved++;
    }
  }

  /** How many orphans were removed by their expiry since the last call (after write, live). */
  takeOrphansRemoved(): number {
    const n = this.orphansRemoved;
    this.orphansRemoved = 0;
    return n;
  }

  /** Records a TransferOut that is not its bid's swap (written with the transaction; nothing joins it). */
  ignoreOut(ignored: IgnoredOut): void {
    this.ignored.push(ignored);
  }

  /** Removes and returns the orphans naming `ref`, oldest first. */
  adoptOrphans(ref: string): ChainEvent[] {
    const set = this.orphans.get(ref);
    if (!set) return [];
    this.orphans.delete(ref);
    const list = [...set];
    for (const o of list) o.adopted = true;
    // The expiry heap drops adopted ones when they come up; a resident set (a replay) adopts most orphans it
    // keeps, long before they would expire, so it drops them at once when they are most of the heap.
    this.adoptedInHeap += list.length;
    if (this.adoptedInHeap > 1_024 && this.adoptedInHeap * 2 > this.orphansByExpiry.size) {
      this.orphansByExpiry.retain((o) => !o.adopted && !o.expired);
      this.adoptedInHeap = 0;
    }
    this.adoptedLists.push(list);
    return list.map((o) => o.event);
  }

  private readonly adoptedLists: Orphan[][] = [];
  private adoptedInHeap = 0;

  /** Was `eventId` handled before this transaction, or earlier in it? */
  handled(eventId: string, handledInBatch: ReadonlySet<string>): boolean {
    return this.handledBefore.has(eventId) || handledInBatch.has(eventId) || this.processed.has(eventId);
  }

  holdHeight(h: Omit<HeldHeight, 'stored'>): void {
    // One held height per chain stream and height (as the table's key): a repeat changes nothing.
    const key = `${clockKey(h.chainId, h.stream)}/${h.height}`;
    if (this.heldKeys.has(key)) return;
    this.heldKeys.add(key);
    const held = { ...h, stored: false };
    this.hold(held);
    this.newHeld.add(held);
  }

  /** Heights that waited for `eventId`: removed, for the caller to move their clocks. */
  releaseHeights(eventId: string): HeldHeight[] {
    const list = this.held.get(eventId);
    if (!list) return [];
    this.held.delete(eventId);
    for (const h of list) {
      const key = clockKey(h.chainId, h.stream);
      this.heldKeys.delete(`${key}/${h.height}`);
      this.heldByStream.get(key)?.delete(h);
    }
    if (list.some((h) => h.stored)) this.released.push(eventId);
    for (const h of list) this.newHeld.delete(h);
    return list;
  }

  /** Moves a chain stream's clock forward (never back); returns its time now. */
  advanceClock(chainId: string, stream: Stream, height: number, blockTime: number): number {
    const key = clockKey(chainId, stream);
    const now = Math.max(this.clocks.get(key) ?? 0, blockTime);
    this.clocks.set(key, now);
    this.clockHeights.set(key, Math.max(this.clockHeights.get(key) ?? 0, height));
    this.dirtyClocks.add(key);
    return now;
  }

  /** Pending swaps whose wait `due` says is over, in bid order (a scan: for the rare DID answer). */
  pendingWhere(due: (wait: Wait) => boolean): string[] {
    return this.waiting.where(due);
  }

  /**
   * Pending swaps waiting for `chainId`'s clock to reach `now` at most, in bid order; the caller judges each
   * again (they are no longer indexed under this wait).
   */
  dueOnClock(chainId: string, now: number): string[] {
    return this.waiting.dueOnClock(chainId, now);
  }

  /** Pending swaps waiting for complaints up to `seen` at most, in bid order; the caller judges each again. */
  dueOnComplaints(seen: number): string[] {
    return this.waiting.dueOnComplaints(seen);
  }

  /**
   * Resident: writes the verdicts and violations decided since the last call, and forgets the facts of
   * decided swaps unless `keepFacts` (a decided swap is never judged again: a late event only needs to find
   * it, by bid or by its TransferOut).
   */
  async writeDecisions(pool: Pool, keepFacts: boolean): Promise<void> {
    // Taken before the first await: another partition's batch may add its own meanwhile.
    const verdicts = this.verdicts.splice(0);
    const violations = this.violations.splice(0);
    if (!keepFacts) {
      for (const bid of this.decidedSinceWrite) {
        const swap = this.swaps.get(bid)!;
        this.swaps.set(bid, { ...swap, facts: decidedSkeleton(swap.facts), dirty: false });
      }
      // Nothing of these is written without the facts.
      this.decidedSinceWrite.clear();
      this.adoptedLists.length = 0;
      this.newLinks.length = 0;
      this.released.length = 0;
      this.ignored.length = 0;
      // The locks stay in memory (a complaint may come long after): only their rows are not written.
      this.newLocks.length = 0;
      this.droppedSwaps.clear();
      this.repointed.length = 0;
    }
    try {
      await withTransaction(pool, (tx) => writeDecided(tx, this.tables, verdicts, violations));
    } catch (err) {
      // Kept for the next write: the batch's ids are marked processed already, so its redelivery decides
      // nothing again, and these would be lost (a replay then reports differences the live one does not have).
      this.verdicts.unshift(...verdicts);
      this.violations.unshift(...violations);
      throw err;
    }
  }

  /** Writes everything back: a fixed number of statements. */
  async write(tx: Queryable): Promise<void> {
    const { tables: t } = this;
    if (this.droppedSwaps.size > 0) {
      await tx.query(`DELETE FROM ${t.swaps} WHERE bid_id = ANY($1)`, [[...this.droppedSwaps]]);
      this.droppedSwaps.clear();
    }
    const swaps = [...this.swaps.values()].filter((s) => s.dirty);
    if (swaps.length > 0) {
      await tx.query(
        `INSERT INTO ${t.swaps} (bid_id, out_transfer_id, facts, status, wait_kind, wait_chain, wait_until, wait_address, waiting_for, decided_at)
         SELECT b, o, f, s, wk, wc, wu, wa, wf, CASE WHEN s = 'decided' THEN now() END
           FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[])
             AS r(b, o, f, s, wk, wc, wu, wa, wf)
         ON CONFLICT (bid_id) DO UPDATE SET
           out_transfer_id = EXCLUDED.out_transfer_id, facts = EXCLUDED.facts, status = EXCLUDED.status,
           wait_kind = EXCLUDED.wait_kind, wait_chain = EXCLUDED.wait_chain, wait_until = EXCLUDED.wait_until,
           wait_address = EXCLUDED.wait_address, waiting_for = EXCLUDED.waiting_for,
           decided_at = COALESCE(${t.swaps}.decided_at, EXCLUDED.decided_at)`,
        [
          swaps.map((s) => s.facts.bidId),
          swaps.map((s) => s.facts.out?.transferId ?? null),
          swaps.map((s) => jsonbText(s.facts)),
          swaps.map((s) => (s.decided ? 'decided' : 'pending')),
          swaps.map((s) => s.wait?.kind ?? null),
          swaps.map((s) => (s.wait?.kind === 'clock' ? s.wait.chainId : null)),
          swaps.map((s) => (s.wait && s.wait.kind !== 'did' ? s.wait.until : null)),
          swaps.map((s) => (s.wait?.kind === 'did' ? s.wait.address : null)),
          swaps.map((s) => s.waitingFor),
        ],
      );
    }
    await writeDecided(tx, t, this.verdicts, this.violations);
    const adopted = this.adoptedLists.flat();
    const gone = adopted.filter((o) => o.stored).map((o) => o.eventId);
    if (gone.length > 0) await tx.query(`DELETE FROM ${t.orphans} WHERE event_id = ANY($1)`, [gone]);
    const kept = [...this.orphans.values()].flatMap((set) => [...set]).filter((o) => !o.stored);
    if (kept.length > 0) {
      await tx.query(
        `INSERT INTO ${t.orphans} (event_id, ref, event, expires_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::bigint[]) ON CONFLICT DO NOTHING`,
        [
          kept.map((o) => o.eventId),
          kept.map((o) => o.ref),
          kept.map((o) => jsonbText(o.event)),
          kept.map((o) => o.expiresAt),
        ],
      );
    }
    // The orphans every watched chain's clock passed the expiry of (orphan-retention.ts): those of the table,
    // which the batch did not read, in one statement on the expiry index. A resident set removed its own.
    if (this.orphanClock !== undefined && !this.resident) {
      const { rowCount } = await tx.query(`DELETE FROM ${t.orphans} WHERE expires_at < $1`, [
        this.orphanClock,
      ]);
      this.orphansRemoved += rowCount ?? 0;
      this.orphanClock = undefined;
    }
    if (this.ignored.length > 0) {
      const rows = this.ignored;
      await tx.query(
        `INSERT INTO ${t.ignoredOuts} (event_id, bid_id, chain_id, transfer_id, reason, detail, event)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[])
         ON CONFLICT DO NOTHING`,
        [
          rows.map((r) => r.eventId),
          rows.map((r) => r.event.bidId),
          rows.map((r) => r.event.chainId),
          rows.map((r) => r.event.transferId),
          rows.map((r) => r.reason),
          // Words for the operator (text: U+0000 written as the six characters \u0000).
          rows.map((r) => nulAsText(r.detail)),
          rows.map((r) => jsonbText(r.event)),
        ],
      );
    }
    if (this.newLocks.length > 0) {
      const rows = this.newLocks;
      await tx.query(
        `INSERT INTO ${t.agreementLocks} (agreement_key, chain_id, transfer_id, bid_id, block_time, copy_key)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[])
         ON CONFLICT DO NOTHING`,
        [
          rows.map(([k]) => k),
          rows.map(([, l]) => l.chainId),
          rows.map(([, l]) => l.transferId),
          rows.map(([, l]) => l.bidId),
          rows.map(([, l]) => l.blockTime),
          rows.map(([, , c]) => c),
        ],
      );
    }
    if (this.newLinks.length > 0) {
      await tx.query(
        `INSERT INTO ${t.inLinks} (in_transfer_id, bid_id, lock)
         SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[])
         ON CONFLICT DO NOTHING`,
        [this.newLinks.map(([i]) => i), this.newLinks.map(([, b]) => b), this.newLinks.map(([, , l]) => l)],
      );
    }
    if (this.repointed.length > 0) {
      // Each swap's links to where they end (moved on again later in the transaction, they follow).
      const moves = new Map<string, string>();
      for (const [from, to] of this.repointed) {
        for (const [f, t] of moves) if (t === from) moves.set(f, to);
        moves.set(from, to);
      }
      await tx.query(
        `UPDATE ${t.inLinks} l SET bid_id = m.t FROM unnest($1::text[], $2::text[]) AS m(f, t) WHERE l.bid_id = m.f`,
        [[...moves.keys()], [...moves.values()]],
      );
      this.repointed.length = 0;
    }
    if (this.dirtyClocks.size > 0) {
      const keys = [...this.dirtyClocks].map(splitClockKey);
      await tx.query(
        `INSERT INTO ${t.clocks} (chain_id, stream, height, block_time)
         SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
         ON CONFLICT (chain_id, stream) DO UPDATE
           SET height = GREATEST(${t.clocks}.height, EXCLUDED.height),
               block_time = GREATEST(${t.clocks}.block_time, EXCLUDED.block_time)`,
        [
          keys.map(([c]) => c),
          keys.map(([, s]) => s),
          [...this.dirtyClocks].map((k) => this.clockHeights.get(k)!),
          [...this.dirtyClocks].map((k) => this.clocks.get(k)!),
        ],
      );
    }
    if (this.released.length > 0)
      await tx.query(`DELETE FROM ${t.pendingHeights} WHERE last_event_id = ANY($1)`, [this.released]);
    if (this.arrived.length > 0)
      await tx.query(`DELETE FROM ${t.missingEvents} WHERE event_id = ANY($1) AND NOT released`, [
        this.arrived,
      ]);
    // The engine lets every release it read go in the same transaction (handleBatch).
    if (this.releasedMissing.length > 0)
      await tx.query(
        `UPDATE ${t.missingEvents} SET release_applied = true WHERE event_id = ANY($1) AND released`,
        [this.releasedMissing],
      );
    if (this.newHeld.size > 0) {
      const h = [...this.newHeld];
      await tx.query(
        `INSERT INTO ${t.pendingHeights} (chain_id, stream, height, block_time, last_event_id)
         SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[]) ON CONFLICT DO NOTHING`,
        [
          h.map((x) => x.chainId),
          h.map((x) => x.stream),
          h.map((x) => x.height),
          h.map((x) => x.blockTime),
          h.map((x) => x.lastEventId),
        ],
      );
    }
  }
}

function splitClockKey(key: string): [string, Stream] {
  const at = key.lastIndexOf('/');
  return [key.slice(0, at), key.slice(at + 1) as Stream];
}

/**
 * Complaints are seen up to the oldest reputation chain's clock: undefined until every reputation chain has
 * one, +Infinity when no chain has a reputation contract.
 */
export function complaintsSeenThrough(
  reputationChains: readonly string[],
  clocks: ReadonlyMap<string, number>,
): number | undefined {
  let min = Number.POSITIVE_INFINITY;
  for (const chainId of reputationChains) {
    const t = clocks.get(clockKey(chainId, 'reputation'));
    if (t === undefined) return undefined;
    min = Math.min(min, t);
  }
  return min;
}

/**
 * The clock orphans are removed by (orphan-retention.ts): the oldest of the watched chains' swap clocks;
 * undefined until each has one.
 */
export function orphanClock(
  swapChains: readonly string[],
  clocks: ReadonlyMap<string, number>,
): number | undefined {
  let min = Number.POSITIVE_INFINITY;
  for (const chainId of swapChains) {
    const t = clocks.get(clockKey(chainId, 'swap'));
    if (t === undefined) return undefined;
    min = Math.min(min, t);
  }
  return swapChains.length === 0 ? undefined : min;
}

/**
 * The furthest the complaint clock can reach within the batch (its heights, or those it releases, move the
 * reputation clocks no further than they say); -1 while a reputation chain has no clock in reach.
 */
function boundOfComplaints(
  reputationChains: readonly string[],
  clocks: ReadonlyMap<string, number>,
  heightTimes: ReadonlyMap<string, number>,
): number {
  const reachable = new Map(clocks);
  for (const [key, time] of heightTimes) reachable.set(key, Math.max(time, clocks.get(key) ?? time));
  return Math.min(complaintsSeenThrough(reputationChains, reachable) ?? -1, Number.MAX_SAFE_INTEGER);
}

async function writeDecided(
  db: Queryable,
  t: ClassifierTables,
  verdicts: readonly SwapVerdict[],
  violations: readonly Violation[],
): Promise<void> {
  // Each list as one JSON array: a text[] of JSON documents costs the driver an escape of every quote. A
  // document with U+0000 in a string is stored escaped (jsonb-nul.ts).
  if (verdicts.length > 0) {
    await db.query(
      `INSERT INTO ${t.verdicts} (bid_id, verdict) SELECT v->>'bidId', v FROM jsonb_array_elements($1::jsonb) v`,
      [jsonbArrayText(verdicts)],
    );
  }
  if (violations.length > 0) {
    await db.query(
      `INSERT INTO ${t.violations} (bid_id, violation)
       SELECT v->>'bidId', v FROM jsonb_array_elements($1::jsonb) v`,
      [jsonbArrayText(violations)],
    );
  }
}

/**
 * What a replay keeps of a decided swap: it is never judged again, and a late event only needs to find it (by
 * bid, or by its TransferOut's transfer id) and learn that it is decided. Keeping every decided swap's events
 * would hold a year of them in memory.
 */
function decidedSkeleton(facts: SwapFacts): SwapFacts {
  const out = facts.out && ({ kind: 'TransferOut', transferId: facts.out.transferId } as TransferOut);
  return { ...emptyFacts(facts.bidId), out };
}

/** Keeps a lock in a list by key; false when it is known already (same chain and transfer). */
function keepIn(map: Map<string, AgreementLock[]>, key: string, lock: AgreementLock): boolean {
  const list = map.get(key);
  if (list?.some((l) => l.chainId === lock.chainId && l.transferId === lock.transferId)) return false;
  if (list) list.push(lock);
  else map.set(key, [lock]);
  return true;
}

/** Whether swap `a`'s lock comes before `b`'s in chain order (a decided one's, kept as a skeleton, by transfer id). */
function earlierLock(a: StoredSwap, b: StoredSwap): boolean {
  const x = a.facts.out!;
  const y = b.facts.out!;
  if (x.blockTimestamp === undefined || y.blockTimestamp === undefined) return x.transferId < y.transferId;
  return byChainPosition(x, y) < 0;
}
