/**
 * The moment a replay compares its tables with the live ones. The live consumer keeps handling messages
 * while a replay runs, so "the replay reached the ends of its topics, then compared" compares the live tables
 * with whatever the live consumer handled meanwhile: a false DIFFERENT on a busy deployment. Both consumers
 * keep their positions in PostgreSQL (bus_group_offsets, both buses) and the live one commits its effects and
 * its positions together, so a database snapshot in which the live group's positions are exactly the
 * replay's holds the live tables as of the very messages the replay applied. `settleAtLiveCut` finds one, or
 * makes one: when the live group went further, its tables are copied on that snapshot and the replay applies
 * up to its positions, not a message more; when the live group is behind, it waits for it.
 */
import { randomBytes } from 'node:crypto';
import { PoisonMessageError } from '../bus/errors.js';
import type { BatchHandler, BusMessage, EventBus } from '../bus/port.js';
import { loadPositions } from '../bus/positions.js';
import { withTransaction, type Pool, type PoolClient, type Queryable } from '../db/pool.js';
import type { Logger } from '../logging/logger.js';

/** Next offset per `topic/partition` (as loadPositions keys them). */
export type Positions = Map<string, bigint>;

const partitionKey = (topic: string, partition: number) => `${topic}/${partition}`;

/** Where `a` and `b` differ (a partition one of them has no position in counts as 0). */
function compare(a: Positions, b: Positions): { behind: boolean; ahead: boolean } {
  let behind = false;
  let ahead = false;
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    const x = a.get(key) ?? 0n;
    const y = b.get(key) ?? 0n;
    if (x < y) behind = true;
    if (x > y) ahead = true;
  }
  return { behind, ahead };
}

/**
 * The replay's messages as far as `cut` allows: those before the cut's position in their partition (all of
 * them while there is no cut). Messages at or past it are passed over, and the replay group is then sought
 * back to the cut, so they are applied after the next cut.
 */
export class ReplayCut {
  private cut: Positions | undefined;

  filter<M extends Pick<BusMessage, 'topic' | 'partition' | 'offset'>>(messages: readonly M[]): readonly M[] {
    const cut = this.cut;
    if (cut === undefined) return messages;
    return messages.filter((m) => m.offset < (cut.get(partitionKey(m.topic, m.partition)) ?? 0n));
  }

  set(cut: Positions): void {
    this.cut = cut;
  }

  /** Messages passed over by `handler`: malformed ones, and ones that kept failing otherwise. */
  readonly skipped = { malformed: 0, failed: 0 };

  /**
   * A replay's batch handler: `handle` on the messages the cut lets through. A batch that fails is delivered
   * again one message at a time; a message that still fails is passed over, counted in `skipped` and told to
   * `onSkipped`, never dead-lettered: the live consumer dead-lettered it already (`npm run dead-letters` would
   * count and re-send a second copy), or, new in this build, the replay says so (logged). A malformed one at
   * once; one that fails otherwise at its last attempt (the bus's attempts, as live: a replay gives a
   * transient failure the same chances). `onSkipped` does what the live consumer's dead-lettering did beside
   * moving it (the Classifier's hold on its chain clock).
   */
  handler(
    handle: BatchHandler,
    log: Logger,
    onSkipped: (message: BusMessage, err: Error) => void | Promise<void> = () => undefined,
  ): BatchHandler {
    return async (messages, context) => {
      const taken = this.filter(messages);
      if (taken.length === 0) return;
      try {
        await handle(taken, context);
      } catch (err) {
        if (taken.length > 1) throw err;
        const message = taken[0]!;
        if (err instanceof PoisonMessageError) {
          this.skipped.malformed++;
          return onSkipped(message, err);
        }
        if (!context.lastAttempt || context.signal.aborted) throw err;
        const error = err instanceof Error ? err : new Error(String(err));
        this.skipped.failed++;
        log.error(
          {
            topic: message.topic,
            partition: message.partition,
            offset: String(message.offset),
            err: error.message,
          },
          'replay: a message kept failing and is not applied',
        );
        await onSkipped(message, error);
      }
    };
  }
}

export interface LiveCutOptions {
  pool: Pool;
  bus: EventBus;
  topics: readonly string[];
  liveGroup: string;
  replayGroup: string;
  /** The replay's own filter (its subscription's handler applies only what it lets through). */
  cut: ReplayCut;
  /** Starts the replay's subscription again (from its group's positions); resolves to its stop. */
  resume(): Promise<{ stop(): Promise<void> }>;
  /** Gives up waiting for a live group that is behind after this long, and compares anyway (`exact: false`). */
  timeoutMs: number;
  pollMs?: number;
}

/** The comparison, on the live tables of a snapshot or on copies of them taken in one. */
export interface CutComparison<T> {
  /**
   * Copies the live tables the comparison reads into temporary tables (`CREATE TEMP TABLE … AS SELECT …`),
   * on the snapshot where the live group is ahead of the replay: the replay then catches up to that snapshot
   * and is compared with the copies.
   */
  freeze(query: Queryable['query']): Promise<void>;
  /** `frozen`: compare with the copies (on the session that made them), else with the live tables. */
  compare(query: Queryable['query'], frozen: boolean): Promise<T>;
}

/**
 * Compares on a snapshot in which the live group's positions are the replay group's, the replay's
 * subscription being stopped. When the live group is ahead, its tables are copied on that snapshot and the
 * replay applies exactly what the live group had (a busy deployment never stands still for a second look).
 * When the live group is behind, it is waited for; if it is still behind at the timeout, the tables are
 * compared anyway and the result says so (`exact` false).
 */
export async function settleAtLiveCut<T>(
  options: LiveCutOptions,
  comparison: CutComparison<T>,
): Promise<{ result: T; exact: boolean; frozen: boolean }> {
  const { pool, topics } = options;
  const pollMs = options.pollMs ?? 200;
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      const { rows } = await holder.query<{ id: string }>('SELECT pg_export_snapshot() AS id');
      const live = await loadPositions(holder, options.liveGroup, topics);
      const replay = await loadPositions(holder, options.replayGroup, topics);
      const { behind, ahead } = compare(live, replay);
      if (!behind && !ahead) {
        const result = await comparison.compare(snapshotQuery(pool, rows[0]!.id), false);
        await holder.query('COMMIT');
        return { result, exact: true, frozen: false };
      }
      if (!behind) {
        // Ahead only: its tables as of this snapshot, then the replay up to exactly its positions.
        const onHolder = oneAtATime(holder);
        await comparison.freeze(onHolder);
        await holder.query('COMMIT');
        await catchUp(options, live, pollMs);
        const result = await comparison.compare(onHolder, true);
        return { result, exact: true, frozen: true };
      }
      await holder.query('ROLLBACK');
      if (Date.now() > deadline) {
        const result = await comparison.compare(pool.query.bind(pool) as Queryable['query'], false);
        return { result, exact: false, frozen: false };
      }
    } catch (err) {
      await holder.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      await holder.query('DISCARD TEMP').catch(() => undefined);
      holder.release();
    }
    // The live group is behind the replay somewhere: it catches up in its own time.
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/**
 * The query of one session for a comparison that asks in parallel (both replays compare several tables at
 * once): its statements go one at a time. pg queues them itself, but that is deprecated (pg 9 drops it).
 */
function oneAtATime(client: PoolClient): Queryable['query'] {
  let last: Promise<unknown> = Promise.resolve();
  return ((...args: Parameters<PoolClient['query']>) => {
    const run = last.then(() => (client.query as (...a: unknown[]) => Promise<unknown>)(...args));
    last = run.catch(() => undefined);
    return run;
  }) as Queryable['query'];
}

/** The replay applies what lies before `target` and stops there (sought back over what it passed over). */
async function catchUp(options: LiveCutOptions, target: Positions, pollMs: number) {
  options.cut.set(target);
  const subscription = await options.resume();
  const limit = Date.now() + Math.max(options.timeoutMs, 60_000);
  try {
    // Every message before the target exists (the live group handled it), so the replay gets there.
    while (compare(await loadPositions(options.pool, options.replayGroup, options.topics), target).behind) {
      if (Date.now() > limit) throw new Error("the replay did not reach the live consumer's positions");
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  } finally {
    await subscription.stop();
  }
  const at = await loadPositions(options.pool, options.replayGroup, options.topics);
  for (const [key, offset] of at) {
    const cut = target.get(key) ?? 0n;
    if (offset <= cut) continue;
    const slash = key.lastIndexOf('/');
    await options.bus.seek(options.replayGroup, key.slice(0, slash), {
      to: 'offset',
      partition: Number(key.slice(slash + 1)),
      offset: cut,
    });
  }
}

/** A query function whose statements each run in a read-only transaction on the exported snapshot `id`. */
function snapshotQuery(pool: Pool, id: string): Queryable['query'] {
  return ((text: string, values?: unknown[]) =>
    withTransaction(
      pool,
      async (client) => {
        await client.query(`SET TRANSACTION SNAPSHOT '${id.replace(/'/g, "''")}'`);
        return client.query(text, values);
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    )) as Queryable['query'];
}

/**
 * The suffix of a replay's scratch schema and consumer group: time, process and 6 random hex digits, so two
 * replays started in the same millisecond (in one process or two) never share them. Lower-case letters,
 * digits and `_` only (a bare schema name), 25 characters at most.
 */
export function replayRunId(): string {
  return `${Date.now().toString(36)}_${process.pid.toString(36)}_${randomBytes(3).toString('hex')}`;
}
