import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import pg from 'pg';
import {
  destroyConnection,
  endLostSession,
  endWithin,
  queryWithin,
  sessionOf,
  type ServerSession,
} from '../../db/dedicated-connection.js';
import type { Logger } from '../../logging/logger.js';
import { withTransaction, type Pool } from '../../db/pool.js';
import { PartitionFencedError } from '../errors.js';
import { deliverBatch, type DeliveryOptions } from '../deliver.js';
import {
  BatchTries,
  commitPosition,
  initPosition,
  loadPosition,
  forgetAttempt,
  recordAttempt,
  type PartitionRef,
} from '../positions.js';
import { backoffMs, sleep } from '../retry.js';
import { WakeSignal } from '../../runtime/wake-signal.js';
import {
  batchHandlerOf,
  deadLetterTopic,
  DLQ_HEADERS,
  valueOmitted,
  type BusMessage,
  type DeliveryObserver,
  type SubscribeOptions,
  type Subscription,
  type ValuesOnly,
} from '../port.js';
import { BUS_CHANNEL } from './channel.js';
import type { PostgresBus } from './postgres-bus.js';

export interface PostgresSubscriptionOptions extends SubscribeOptions {
  maxAttempts: number;
  startFrom: 'earliest' | 'latest';
  pool: Pool;
  connectionString: string;
  log: Logger;
  idlePollMs: number;
  rebalanceMs: number;
  /** PostgresBusOptions.controlTimeoutMs. */
  controlTimeoutMs: number;
  /** Most bytes of keys and values one read of a partition takes (see FETCH_BYTES). */
  fetchBytes: number;
  observer?: DeliveryObserver;
  onStopped(subscription: PostgresSubscription): void;
}

/** Messages read per fetch: at least this many, and at least one whole batch. */
const MIN_FETCH = 200;

/**
 * Default most bytes of keys and values one read of a partition holds (the first message always comes, whatever
 * its size, so none is held up). A bound in rows alone let a read hold hundreds of MiB when messages run to MiBs
 * (archive documents, large chain.events envelopes). A worker holds its page and the one read ahead: at most twice
 * this a partition. A replay's page of 5,000 envelopes of up to 3 KB still comes whole.
 */
export const FETCH_BYTES = 16 * 1024 * 1024;

/**
 * One member of a consumer group on the postgres log.
 *
 * A dedicated "control" connection LISTENs for new messages and holds one session advisory lock per owned
 * partition, so two members never work one partition, and a member killed hard loses its locks the moment
 * its connection drops. Every offset commit is a compare-and-set on the committed value: a member that
 * lost a partition without noticing cannot commit over its successor (its transaction fails, effects too).
 */
export class PostgresSubscription implements Subscription {
  readonly group: string;
  private readonly memberId = randomUUID();
  private readonly workers = new Map<string, PartitionWorker>();
  /** Every partition worker listens on its signal: as many listeners as partitions, not a leak. */
  private readonly stopController = unlimitedListeners(new AbortController());
  private control: pg.Client | undefined;
  /** The control connection's server session. */
  private controlSession: ServerSession | undefined;
  /**
   * The session of a control connection lost (and ended here), which the server may still keep with its partition
   * locks: ended from the next control connection before it takes any.
   */
  private lostSession: ServerSession | undefined;
  private rebalancing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private stopped: Promise<void> | undefined;

  constructor(
    readonly bus: PostgresBus,
    readonly options: PostgresSubscriptionOptions,
  ) {
    this.group = options.group;
  }

  get signal(): AbortSignal {
    return this.stopController.signal;
  }

  async start(): Promise<void> {
    await this.connectControl();
    await this.rebalance();
    this.timer = setInterval(() => {
      this.rebalancing = this.rebalancing
        .then(() => this.rebalance())
        .catch((err) => this.onRebalanceError(err));
    }, this.options.rebalanceMs);
  }

  stop(): Promise<void> {
    this.stopped ??= this.shutdown();
    return this.stopped;
  }

  private async shutdown(): Promise<void> {
    clearInterval(this.timer);
    this.stopController.abort();
    await this.rebalancing.catch(() => undefined);
    await Promise.all([...this.workers.values()].map((w) => w.stop()));
    this.workers.clear();
    const control = this.control;
    this.control = undefined;
    if (control) {
      const { controlTimeoutMs } = this.options;
      await queryWithin(
        control,
        controlTimeoutMs,
        'DELETE FROM bus_group_members WHERE group_id = $1 AND member_id = $2',
        [this.group, this.memberId],
      ).catch(() => undefined);
      // Ending the session releases its advisory locks (the server's goodbye never comes over a dropped one).
      await endWithin(control, controlTimeoutMs);
    }
    this.options.onStopped(this);
    this.options.log.debug('subscription stopped');
  }

  private async connectControl(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      application_name: 'otmoic-bus',
      connectionTimeoutMillis: this.options.controlTimeoutMs,
    });
    client.on('error', (err) => this.onControlLost(client, err));
    client.on('end', () => this.onControlLost(client));
    await client.connect();
    client.on('notification', (n) => {
      if (n.channel !== BUS_CHANNEL || !n.payload) return;
      for (const worker of this.workers.values()) if (worker.topic === n.payload) worker.wake();
    });
    try {
      const session = await sessionOf(client);
      // A control connection lost without the server knowing keeps its partition locks there: freed first.
      if (this.lostSession) {
        await endLostSession(client, this.lostSession);
        this.lostSession = undefined;
      }
      await client.query(`LISTEN ${BUS_CHANNEL}`);
      // A reconnect after a lost connection: the same member, now on this session.
      await client.query(
        `INSERT INTO bus_group_members (group_id, member_id, pid, backend_start)
         SELECT $1, $2, pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()
         ON CONFLICT (group_id, member_id) DO UPDATE SET pid = EXCLUDED.pid, backend_start = EXCLUDED.backend_start`,
        [this.group, this.memberId],
      );
      this.controlSession = session;
    } catch (err) {
      await endWithin(client, this.options.controlTimeoutMs);
      throw err;
    }
    this.control = client;
  }

  /**
   * A statement on the control connection. One dropped silently answers nothing and reports nothing: a
   * statement not answered within controlTimeoutMs ends it here and gives its partitions up (onControlLost),
   * to be taken again on a new connection. The rebalance asks every rebalanceMs, so it is its heartbeat (a
   * timer of its own would put a second statement on the connection while one runs).
   */
  private controlQuery<R extends pg.QueryResultRow>(
    control: pg.Client,
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    return queryWithin<R>(control, this.options.controlTimeoutMs, text, values, (reason) =>
      this.onControlLost(control, new Error(reason)),
    );
  }

  /** The control connection is gone, and with it every partition lock: stop working them at once. */
  private onControlLost(client: pg.Client, err?: Error): void {
    if (this.control !== client || this.stopController.signal.aborted) return;
    this.control = undefined;
    this.lostSession = this.controlSession;
    destroyConnection(client);
    this.options.log.warn({ err: err?.message }, 'bus control connection lost; giving up partitions');
    for (const worker of this.workers.values()) void worker.stop();
    this.workers.clear();
  }

  /** A worker gave up: forget it and unlock its partition, so any member can take it at its next rebalance. */
  async release(worker: PartitionWorker): Promise<void> {
    if (this.workers.get(worker.id) !== worker) return;
    this.workers.delete(worker.id);
    const control = this.control;
    if (control)
      await this.controlQuery(control, 'SELECT pg_advisory_unlock(hashtextextended($1, 0))', [
        worker.lockKey,
      ]).catch(() => undefined);
  }

  private onRebalanceError(err: unknown): void {
    if (!this.stopController.signal.aborted) {
      this.options.log.warn({ err: (err as Error).message }, 'bus rebalance failed; retrying');
    }
  }

  /** Takes or gives up partitions so that live members share them evenly. */
  private async rebalance(): Promise<void> {
    if (this.stopController.signal.aborted) return;
    if (!this.control) await this.connectControl();
    const control = this.control!;
    // Members whose control connection no longer exists are gone.
    await this.controlQuery(
      control,
      `DELETE FROM bus_group_members m WHERE group_id = $1 AND NOT EXISTS (
         SELECT 1 FROM pg_stat_activity a WHERE a.pid = m.pid AND a.backend_start = m.backend_start)`,
      [this.group],
    );
    const live = await this.controlQuery<{ n: string }>(
      control,
      'SELECT count(*) AS n FROM bus_group_members WHERE group_id = $1',
      [this.group],
    );
    const members = Math.max(1, Number(live.rows[0]!.n));
    const all: Array<{ topic: string; partition: number }> = [];
    for (const topic of this.options.topics) {
      const count = await this.bus.partitionCount(topic);
      for (let partition = 0; partition < count; partition++) all.push({ topic, partition });
    }
    const share = Math.ceil(all.length / members);

    if (this.workers.size > share) {
      const extra = [...this.workers.values()].slice(share);
      for (const worker of extra) {
        await worker.stop();
        this.workers.delete(worker.id);
        await this.controlQuery(control, 'SELECT pg_advisory_unlock(hashtextextended($1, 0))', [
          worker.lockKey,
        ]);
      }
      return;
    }
    // Resolves once the new workers know their starting offsets, so that a `latest` group sees everything
    // published after subscribe() returned.
    const started: Promise<void>[] = [];
    // Start at a member-specific place so that members joining together try different partitions first.
    const startAt = parseInt(this.memberId.slice(0, 8), 16) % all.length;
    for (let i = 0; i < all.length && this.workers.size < share; i++) {
      const { topic, partition } = all[(startAt + i) % all.length]!;
      const id = `${topic}/${partition}`;
      if (this.workers.has(id)) continue;
      const lockKey = `${this.group}/${id}`;
      const got = await this.controlQuery<{ ok: boolean }>(
        control,
        'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok',
        [lockKey],
      );
      if (!got.rows[0]!.ok) continue;
      if (this.stopController.signal.aborted || this.control !== control) return;
      const worker = new PartitionWorker(this, topic, partition, lockKey);
      this.workers.set(id, worker);
      started.push(worker.start());
    }
    await Promise.all(started);
  }
}

/** Consecutive failed passes (database errors) before a worker gives its partition up for another to take. */
const MAX_FAILED_PASSES = 6;

/** Works one owned partition: fetch in offset order, handle, commit, repeat; sleeps until notified. */
class PartitionWorker {
  readonly id: string;
  private readonly stopController = new AbortController();
  private running: Promise<void> = Promise.resolve();
  private readonly wakeSignal = new WakeSignal();
  private readonly ref: PartitionRef;
  private readonly delivery: DeliveryOptions;
  private readonly maxBatch: number;
  private readonly lingerMs: number;
  private readonly tries: BatchTries;
  /** SubscribeOptions.valuesOnly when it names this worker's topic. */
  private readonly valuesOnly: ValuesOnly | undefined;

  constructor(
    private readonly subscription: PostgresSubscription,
    readonly topic: string,
    readonly partition: number,
    readonly lockKey: string,
  ) {
    this.id = `${topic}/${partition}`;
    this.ref = { group: subscription.options.group, topic, partition };
    const { pool, maxAttempts, group, log } = subscription.options;
    const { handle, maxBatch, lingerMs } = batchHandlerOf(subscription.options);
    const only = subscription.options.valuesOnly;
    this.valuesOnly = only?.topic === topic ? only : undefined;
    this.maxBatch = maxBatch;
    this.lingerMs = lingerMs;
    const tries = (this.tries = new BatchTries(pool, this.ref));
    this.delivery = {
      handle,
      maxAttempts,
      group,
      log,
      signal: this.stopController.signal,
      recordAttempt: (offset) => recordAttempt(pool, this.ref, offset),
      forgetAttempt: (offset) => forgetAttempt(pool, this.ref, offset),
      startBatchAttempt: (offset) => tries.start(offset),
      commit: (from, next, tx) => commitPosition(tx ?? pool, this.ref, from, next, true),
      // The dead letter and the commit past it are one transaction: neither happens without the other.
      deadLetter: (dead, message, from, next) =>
        withTransaction(pool, async (tx) => {
          // A message read without its value (valuesOnly) is dead-lettered whole.
          if (valueOmitted(this.valuesOnly, topic, dead.headers ?? {})) {
            const { rows } = await tx.query<{ value: string }>(
              'SELECT value FROM bus_messages WHERE topic = $1 AND partition = $2 AND "offset" = $3',
              [topic, partition, dead.headers![DLQ_HEADERS.offset]],
            );
            dead = { ...dead, value: rows[0]!.value };
          }
          await subscription.bus.publish(deadLetterTopic(topic), [dead], { tx });
          await commitPosition(tx, this.ref, from, next, true);
          await subscription.options.onDeadLetter?.(message, dead.headers?.[DLQ_HEADERS.error] ?? '', tx);
        }),
      settled: (next) => tries.committed(next),
      observer: subscription.options.observer,
    };
    // Stopping the subscription stops every worker (and cuts short their retry back-off).
    subscription.signal.addEventListener('abort', () => this.stopController.abort(), { once: true });
  }

  private get options() {
    return this.subscription.options;
  }

  /** Starts working the partition; resolves when its starting offset is known (or the worker gave up). */
  start(): Promise<void> {
    let positioned!: () => void;
    const ready = new Promise<void>((resolve) => (positioned = resolve));
    this.running = this.loop(positioned)
      .catch((err) => {
        this.options.log.error(
          { err: (err as Error).message, partition: this.id },
          'partition worker failed',
        );
      })
      .finally(positioned);
    return ready;
  }

  wake(): void {
    this.wakeSignal.wake();
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await this.running;
    await this.tries.disarm().catch((err) => {
      this.options.log.warn(
        { err: (err as Error).message, partition: this.id },
        'could not disarm batch try',
      );
    });
  }

  private get stopping(): boolean {
    return this.stopController.signal.aborted;
  }

  /**
   * Passes over the partition, each starting from the stored position (so a seek takes effect at the next
   * pass). A pass that fails on the database is retried with back-off; after MAX_FAILED_PASSES in a row the
   * worker releases the partition (another member, or this one at its next rebalance, takes it afresh).
   */
  private async loop(positioned: () => void): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      try {
        await this.pass(positioned);
        failures = 0;
      } catch (err) {
        if (this.stopping) return;
        failures++;
        if (failures >= MAX_FAILED_PASSES) {
          this.options.log.error(
            { err: (err as Error).message, partition: this.id, failures },
            'partition worker gives its partition up after repeated database errors',
          );
          this.stopController.abort();
          await this.subscription.release(this);
          return;
        }
        this.options.log.warn(
          { err: (err as Error).message, partition: this.id, failures },
          'partition worker pass failed; retrying',
        );
        await sleep(backoffMs(failures, 200), this.stopController.signal);
      }
    }
  }

  /** Reads the position, handles what is there from it, or sleeps until notified when nothing is. */
  private async pass(positioned: () => void): Promise<void> {
    this.wakeSignal.reset();
    let committed = await this.loadCommitted();
    positioned();
    let page = await this.fetch(committed);
    if (page.rows.length === 0) {
      await this.wakeSignal.sleep(this.options.idlePollMs, this.stopController.signal);
      return;
    }
    while (page.rows.length > 0) {
      const { rows } = page;
      // A page that stopped short of the partition's end (full, or cut by bytes): the next one is read while
      // this one is handled (a backlog keeps the handler busy).
      const end = rows[rows.length - 1]!.offset + 1n;
      const following = page.more ? this.fetch(end) : undefined;
      following?.catch(() => undefined); // its error, if any, is met when it is awaited
      // Batches are cut from the page, so they keep to its byte bound too.
      for (let at = 0; at < rows.length; at += this.maxBatch) {
        if (this.stopping) return;
        try {
          const { outcome, next } = await deliverBatch(
            rows.slice(at, at + this.maxBatch),
            committed,
            this.delivery,
          );
          committed = next;
          if (outcome === 'stopped') return;
        } catch (err) {
          // Seeked or taken over: the next pass starts from what is stored now.
          if (err instanceof PartitionFencedError) return;
          throw err;
        }
      }
      if (committed !== end || this.stopping) return;
      if (following) page = await following;
      else if (this.lingerMs > 0) {
        // A steady stream: let it gather for a fuller batch rather than read again at once.
        await sleep(this.lingerMs, this.stopController.signal);
        if (this.stopping) return;
        page = await this.fetch(committed);
      } else return;
    }
  }

  private get fetchSize(): number {
    return Math.max(MIN_FETCH, this.maxBatch);
  }

  private initialized = false;

  private async loadCommitted(): Promise<bigint> {
    const { pool, startFrom } = this.options;
    if (!this.initialized) {
      // A group's first start: at the beginning, or at the current end for `latest`.
      if (startFrom === 'latest') {
        await pool.query(
          `INSERT INTO bus_group_offsets (group_id, topic, partition, next_offset)
           SELECT $1, $2, $3, p.next_offset FROM bus_partitions p WHERE p.topic = $2 AND p.partition = $3
           ON CONFLICT DO NOTHING`,
          [this.ref.group, this.topic, this.partition],
        );
      } else await initPosition(pool, this.ref, 0n);
      this.initialized = true;
    }
    const stored = await loadPosition(pool, this.ref);
    if (stored === undefined) throw new Error(`no stored position for ${this.id}`);
    return stored;
  }

  /**
   * Whether this partition's last read met a message over its share of the byte bound (fetchBytes / fetchSize):
   * it is then read with a running sum of bytes until its messages fit their shares again.
   */
  private summing = false;

  /**
   * The messages from offset `from` on, in offset order and without a gap: at most fetchSize of them, and at most
   * fetchBytes of keys and values unless the first alone is more (it comes alone, so nothing is held up).
   */
  private async fetch(from: bigint): Promise<Page> {
    if (!this.summing) {
      const page = await this.readShares(from);
      if (page) return page;
    }
    return this.readSummed(from);
  }

  /** What a message may take of fetchBytes in a page of fetchSize messages that stays within it. */
  private get share(): number {
    return Math.floor(this.options.fetchBytes / this.fetchSize);
  }

  /**
   * The usual read, as cheap as one without a bound: a message over its share comes without its value, so the
   * values sent are within fetchBytes together, and the page ends before that message (readSummed reads it
   * next). Undefined when the first message is over its share.
   */
  private async readShares(from: bigint): Promise<Page | undefined> {
    const { rows } = await this.options.pool.query<PageRow>(
      this.pageSql(
        (value) => `CASE WHEN octet_length(key) + octet_length(${value}) <= ${this.share} THEN ${value} END`,
      ),
      this.pageParams(from),
    );
    // value is NOT NULL in the table: a null here is a message over its share.
    const over = rows.findIndex((r) => r.value === null);
    if (over === -1) return { rows: rows.map((r) => this.message(r)), more: rows.length === this.fetchSize };
    this.summing = true;
    if (over === 0) return undefined;
    return { rows: rows.slice(0, over).map((r) => this.message(r)), more: true };
  }

  /**
   * A read with a running sum of the bytes of keys and values, cut where it would pass fetchBytes (after the
   * first message, whatever its size). The window doubles PostgreSQL's time for a read of small messages, and
   * made consuming a backlog of them 7-16 % slower when every read used it: hence readShares for the usual ones.
   * octet_length takes a stored value's length from its header: a value cut off is neither detoasted nor sent.
   */
  private async readSummed(from: bigint): Promise<Page> {
    const { rows } = await this.options.pool.query<PageRow & { size: number; followed: boolean }>(
      `SELECT "offset", key, value, headers, created_ms, size, followed FROM (
         SELECT page.*, octet_length(key) + octet_length(value) AS size, row_number() OVER upto AS n,
                sum(octet_length(key) + octet_length(value)) OVER upto AS bytes,
                lead("offset") OVER upto IS NOT NULL AS followed
           FROM (${this.pageSql((value) => value)}) AS page
         WINDOW upto AS (ORDER BY "offset" ROWS UNBOUNDED PRECEDING)
       ) AS summed WHERE n = 1 OR bytes <= ${this.options.fetchBytes} ORDER BY "offset"`,
      this.pageParams(from),
    );
    this.summing = rows.some((r) => r.size > this.share);
    // The rows kept are the page's first: if the last of them was followed, the others were cut off by bytes.
    const more = rows.length === this.fetchSize || rows[rows.length - 1]?.followed === true;
    return { rows: rows.map((r) => this.message(r)), more };
  }

  /**
   * Up to fetchSize rows from $3 in offset order. `read(value)`: the value column as read, given the value as
   * stored (under valuesOnly, '' for one the subscriber passes over, which is never over its share).
   */
  private pageSql(read: (value: string) => string): string {
    const value = this.valuesOnly
      ? `CASE WHEN headers->>$4 IS NOT NULL AND headers->>$4 <> ALL($5::text[]) THEN '' ELSE ${read('value')} END`
      : read('value');
    // The time as milliseconds (what a Date holds): parsing timestamp text cost 2% of a replay.
    return `SELECT "offset", key, ${value} AS value, headers,
                   floor(extract(epoch FROM created_at) * 1000)::float8 AS created_ms
              FROM bus_messages
             WHERE topic = $1 AND partition = $2 AND "offset" >= $3 ORDER BY "offset" LIMIT ${this.fetchSize}`;
  }

  private pageParams(from: bigint): unknown[] {
    return this.valuesOnly
      ? [this.topic, this.partition, from.toString(), this.valuesOnly.header, this.valuesOnly.values]
      : [this.topic, this.partition, from.toString()];
  }

  private message(r: PageRow): BusMessage {
    return {
      topic: this.topic,
      partition: this.partition,
      offset: BigInt(r.offset),
      key: r.key,
      value: r.value!,
      headers: r.headers,
      timestamp: new Date(r.created_ms),
    };
  }
}

/** A read of a partition. `more`: it stopped short of the partition's end (full, or cut by bytes). */
interface Page {
  rows: BusMessage[];
  more: boolean;
}

interface PageRow {
  offset: string;
  key: string;
  /** Null: a message over its share (readShares). */
  value: string | null;
  headers: Record<string, string>;
  created_ms: number;
}

function unlimitedListeners(controller: AbortController): AbortController {
  setMaxListeners(0, controller.signal);
  return controller;
}
