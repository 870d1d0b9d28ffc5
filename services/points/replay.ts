/**
 * `npm run replay -- points`: rebuilds every Points projection from the beginning of its topics into a fresh
 * schema, with a fresh consumer group and the same handler as the live service, then compares each table
 * with the live one row by row. A poison message is counted, not dead-lettered a second time.
 */
import { randomBytes } from 'node:crypto';
import { ProcessedInMemory } from '../../shared/bus/apply-once.js';
import type { Pool, Queryable } from '../../shared/db/pool.js';
import type { EventBus } from '../../shared/bus/port.js';
import type { Logger } from '../../shared/logging/logger.js';
import { PhaseClock } from '../../shared/runtime/phases.js';
import { ReplayCut, settleAtLiveCut } from '../../shared/runtime/replay-cut.js';
import { consumeToEnds, consumeTarget } from '../../shared/bus/consume-to-ends.js';
import { POINTS_GROUP, POINTS_TOPICS, POINTS_VALUES_ONLY, pointsBatchHandler } from './consumer.js';
import {
  LIVE_SCHEMA,
  PROJECTION_TABLES,
  pointsMigrations,
  projectionTablesSql,
  quoteIdentifier,
} from './migrations.js';
import { PointsStore } from './store.js';

export interface PointsReplayOptions {
  db: Pool;
  bus: EventBus;
  log: Logger;
  /** Keep the rebuilt schema for inspection (default: dropped after the comparison). */
  keep: boolean;
  /** Give up when the rebuild has not reached the ends of the topics after this long (default 10 min). */
  timeoutMs?: number;
  /** Called while it runs with the messages left to handle. */
  onProgress?(left: number): void;
  /**
   * How long the comparison waits for the live consumer to be exactly where the replay is (default 30 s);
   * after it the tables are compared anyway, with a note.
   */
  settleTimeoutMs?: number;
}

export interface PointsReplayReport {
  identical: boolean;
  /** What was replayed, and each table's result with the differing keys. */
  lines: string[];
  /** Where the time went, in seconds: setup, consume (to the ends of the topics), compare, cleanup. */
  phases: Record<string, number>;
}

/** A replay's batches: larger than live ones (fewer transactions for a year of events). */
const REPLAY_BATCH = 5_000;

export async function replayPoints(context: PointsReplayOptions): Promise<PointsReplayReport> {
  const stamp = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const schema = `points_replay_${stamp}`;
  const group = `points-replay-${stamp}`;
  const lines: string[] = [];
  const clock = new PhaseClock();

  await context.db.query(`CREATE SCHEMA ${quoteIdentifier(schema)}`);
  try {
    await context.db.query(projectionTablesSql(schema));
    // Rebuilt to be compared and dropped: not worth the write-ahead log.
    for (const { table } of PROJECTION_TABLES)
      await context.db.query(`ALTER TABLE ${quoteIdentifier(schema)}.${quoteIdentifier(table)} SET UNLOGGED`);
    const handle = pointsBatchHandler({
      pool: context.db,
      store: new PointsStore(context.db, schema),
      consumer: group,
      processed: new ProcessedInMemory(),
    });
    clock.mark('setup');
    // Compared at a cut: the replay may have to stop exactly where the live consumer is (replay-cut.ts).
    const cut = new ReplayCut();
    const subscribe = () =>
      context.bus.subscribe({
        group,
        topics: POINTS_TOPICS,
        startFrom: 'earliest',
        maxBatch: REPLAY_BATCH,
        valuesOnly: POINTS_VALUES_ONLY,
        batchHandler: cut.handler(handle, context.log),
      });
    const target = await consumeTarget(context.bus, group, POINTS_TOPICS);
    const subscription = await subscribe();
    try {
      await consumeToEnds(context.bus, group, POINTS_TOPICS, target, {
        timeoutMs: context.timeoutMs ?? 10 * 60_000,
        onProgress: (_done, left) => context.onProgress?.(Number(left)),
      });
    } finally {
      await subscription.stop();
    }
    clock.mark('consume');

    lines.push(`points: rebuilt ${POINTS_TOPICS.join(', ')} from the beginning into schema ${schema}`);
    const { malformed: poison, failed } = cut.skipped;
    if (poison > 0)
      lines.push(`  ${poison} malformed message(s) skipped (as the live consumer dead-lettered them)`);
    if (failed > 0)
      lines.push(
        `  ${failed} message(s) kept failing and were not applied (see the log; the live consumer dead-lettered them, unless this build fails where it did not)`,
      );
    // Every table at once, each one pass over both tables, on a snapshot where the live consumer had handled
    // exactly what the replay did.
    const live = (table: string) => `${quoteIdentifier(LIVE_SCHEMA)}.${quoteIdentifier(table)}`;
    const frozen = (table: string) => `pg_temp.${quoteIdentifier(`frozen_${table}`)}`;
    const settled = await settleAtLiveCut(
      {
        pool: context.db,
        bus: context.bus,
        topics: POINTS_TOPICS,
        liveGroup: POINTS_GROUP,
        replayGroup: group,
        cut,
        resume: subscribe,
        timeoutMs: context.settleTimeoutMs ?? 30_000,
      },
      {
        async freeze(query) {
          for (const { table } of PROJECTION_TABLES)
            await query(`CREATE TEMP TABLE ${frozen(table)} AS SELECT * FROM ${live(table)}`);
        },
        compare: (query, copies) =>
          Promise.all(
            PROJECTION_TABLES.map(({ table, key }) =>
              compareTable({ query }, copies ? frozen(table) : live(table), table, key, schema),
            ),
          ),
      },
    );
    const diffs = settled.result;
    if (settled.frozen)
      lines.push(
        '  compared where the live consumer was: its tables copied there, the replay stopped there (it kept handling new messages)',
      );
    if (!settled.exact)
      lines.push(
        '  note: the live consumer stayed behind the replay: differences may be messages it had not handled yet',
      );
    clock.mark('compare');
    let identical = true;
    PROJECTION_TABLES.forEach(({ table, key }, i) => {
      const diff = diffs[i]!;
      if (diff.onlyLiveCount === 0 && diff.onlyReplayCount === 0) {
        lines.push(`  ${table}: identical (${diff.rows} rows)`);
        return;
      }
      identical = false;
      lines.push(
        `  ${table}: DIFFERENT: ${diff.onlyLiveCount} live row(s) not rebuilt, ${diff.onlyReplayCount} rebuilt row(s) not live`,
      );
      for (const k of diff.onlyLive) lines.push(`    live only: ${key} = ${k}`);
      for (const k of diff.onlyReplay) lines.push(`    rebuilt only: ${key} = ${k}`);
    });
    lines.push(identical ? 'points: IDENTICAL' : 'points: DIFFERENCES FOUND');
    if (context.keep) lines.push(`  rebuilt tables kept in schema ${schema}`);
    if (!context.keep) await context.db.query(`DROP SCHEMA ${quoteIdentifier(schema)} CASCADE`);
    clock.mark('cleanup');
    return { identical, lines, phases: clock.seconds };
  } catch (err) {
    if (!context.keep) await context.db.query(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    throw err;
  }
}

/**
 * Rows (every column) present on one side only, by key; at most 10 keys listed per side. One pass: the tables
 * joined on their primary key, a row that differs counting on both sides (as an EXCEPT each way would).
 * Whole-row comparison treats two NULL columns as equal. `live`: the live table, or its copy taken on the
 * snapshot compared at.
 */
async function compareTable(db: Queryable, live: string, table: string, key: string, schema: string) {
  const rebuilt = `${quoteIdentifier(schema)}.${quoteIdentifier(table)}`;
  const k = quoteIdentifier(key);
  const { rows } = await db.query<{
    rows: string;
    only_live: string;
    only_replay: string;
    live_keys: string[] | null;
    replay_keys: string[] | null;
  }>(
    `WITH d AS (
       SELECT l.${k} AS live_key, r.${k} AS replay_key, l IS DISTINCT FROM r AS differs
         FROM ${live} l FULL JOIN ${rebuilt} r ON l.${k} = r.${k}
     )
     SELECT count(live_key)::text AS rows,
            count(*) FILTER (WHERE live_key IS NOT NULL AND differs)::text AS only_live,
            count(*) FILTER (WHERE replay_key IS NOT NULL AND differs)::text AS only_replay,
            (SELECT array_agg(k) FROM (SELECT live_key AS k FROM d WHERE live_key IS NOT NULL AND differs
                                       ORDER BY 1 LIMIT 10) x) AS live_keys,
            (SELECT array_agg(k) FROM (SELECT replay_key AS k FROM d WHERE replay_key IS NOT NULL AND differs
                                       ORDER BY 1 LIMIT 10) x) AS replay_keys
       FROM d`,
  );
  const row = rows[0]!;
  return {
    rows: Number(row.rows),
    onlyLive: row.live_keys ?? [],
    onlyLiveCount: Number(row.only_live),
    onlyReplay: row.replay_keys ?? [],
    onlyReplayCount: Number(row.only_replay),
  };
}
