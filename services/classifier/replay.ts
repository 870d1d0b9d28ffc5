/**
 * Replay (DESIGN §4): rebuilds the swap projection, verdicts and violations from the beginning of
 * chain.events and chain.heights into fresh tables (a schema of their own), deciding on the DID answers the
 * live verdicts recorded, and compares them with the live tables. Nothing is published.
 */
import type { EventBus } from '../../shared/bus/port.js';
import type { ChainClientConfig } from '../../shared/config/index.js';
import type { Pool, Queryable } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logging/logger.js';
import { PhaseClock } from '../../shared/runtime/phases.js';
import { ReplayCut, replayRunId, settleAtLiveCut } from '../../shared/runtime/replay-cut.js';
import { consumeToEnds, consumeTarget } from '../../shared/bus/consume-to-ends.js';
import type { SwapVerdict } from '../../topics/index.js';
import { RecordedDidSource } from './did-source.js';
import { NUL_ESCAPED, unescapeNul } from './jsonb-nul.js';
import { loadSigners } from './signer-memo.js';
import {
  CLASSIFIER_GROUP,
  CLASSIFIER_TOPICS,
  createClassifier,
  subscribeEngine,
  watchedChains,
} from './index.js';
import { classifierDdl, classifierTables, type ClassifierTables } from './tables.js';

export interface TableComparison {
  live: number;
  replay: number;
  /** Keys (bids) whose rows differ, are only live, or only in the replay (at most 20 of each listed). */
  different: string[];
  onlyLive: string[];
  onlyReplay: string[];
  identical: boolean;
}

export interface ClassifierReplayReport {
  schema: string;
  seconds: number;
  /**
   * Where the time went: tables, names (the DID answers live verdicts recorded), signers (the memo), setup,
   * consume (to the ends of the topics), write (resident state), compare, cleanup.
   */
  phases: Record<string, number>;
  messages: number;
  /** Messages that do not decode, passed over (the live classifier dead-lettered them; not again). */
  malformed: number;
  /** Messages that kept failing otherwise, passed over (logged; never dead-lettered by a replay). */
  notApplied: number;
  verdicts: TableComparison;
  violations: TableComparison;
  identical: boolean;
  /**
   * Compared where the live consumer was (false: it stayed behind the replay until settleTimeoutMs, so a
   * difference may be messages it had not handled yet).
   */
  exactCut: boolean;
  /**
   * The live classifier's saved signer memo: entries saved, and those this process held (fewer when the memo's
   * bound was passed: the others were recovered again when needed, more slowly, with the same results).
   */
  signerMemo: { saved: number; kept: number };
}

export interface ReplayOptions {
  pool: Pool;
  bus: EventBus;
  chainClients: readonly ChainClientConfig[];
  didSupportUrl: string;
  log: Logger;
  /** Keep the replay's schema for inspection (default: dropped after the comparison). */
  keep?: boolean;
  /** Called about four times a second with the messages handled so far and those left. */
  onProgress?(done: number, left: number): void;
  /** The live tables (default: the classifier's). */
  live?: ClassifierTables;
  /** The live consumer group (default: the classifier's). */
  liveGroup?: string;
  /**
   * How long the comparison waits for a live consumer behind the replay (default 30 s); after it the tables
   * are compared anyway and the report says so (`exactCut` false).
   */
  settleTimeoutMs?: number;
  /** classifier.signerMemoEntries: how many of the saved signers this process holds (default 2,000,000). */
  signerMemoEntries?: number;
}

/** A replay's batches: larger than live ones, nothing being read back per batch. */
const REPLAY_BATCH = 5_000;

export async function replayClassifier(options: ReplayOptions): Promise<ClassifierReplayReport> {
  const started = performance.now();
  const clock = new PhaseClock();
  const suffix = replayRunId();
  const schema = `classifier_replay_${suffix}`;
  const group = `classifier-replay-${suffix}`;
  const tables = classifierTables(schema);
  const live = options.live ?? classifierTables();
  await options.pool.query(`CREATE SCHEMA "${schema}"; ${classifierDdl(tables)}`);
  try {
    // Rebuilt to be compared (and dropped, or kept for a look): not worth the write-ahead log, as Points'.
    const { schema: _schema, ...names } = tables;
    for (const table of Object.values(names)) await options.pool.query(`ALTER TABLE ${table} SET UNLOGGED`);
    clock.mark('tables');

    const recorded = await recordedDidNames(options.pool, live.verdicts);
    // Dead-lettered events the operator released live: the replay lets its clocks pass them too.
    const released = await options.pool.query<{ event_id: string }>(
      `SELECT DISTINCT event_id FROM ${live.missingEvents} WHERE released`,
    );
    clock.mark('names');

    const { engine, did } = createClassifier({
      pool: options.pool,
      tables,
      group,
      chains: watchedChains(options.chainClients),
      didSupportUrl: options.didSupportUrl,
      didCacheMs: 60_000,
      signerMemoEntries: options.signerMemoEntries,
      log: options.log,
      wrapDid: (fallback) => new RecordedDidSource(recorded, fallback),
      // Only this process writes the fresh tables: the state stays in memory, only decisions are written.
      resident: options.keep ? 'keep' : 'decisions',
      releasedHolds: new Set(released.rows.map((r) => r.event_id)),
    });
    // Signatures the live classifier recovered are not recovered again (a pure function's saved results).
    const signerMemo = await loadSigners(options.pool);
    if (signerMemo.kept < signerMemo.saved)
      options.log.warn(
        signerMemo,
        'the saved signer memo is larger than this process holds: the signatures left out are recovered again (slower, same results); classifier.signerMemoEntries (about 330 bytes each) raises the bound',
      );
    clock.mark('signers');
    const target = await consumeTarget(options.bus, group, CLASSIFIER_TOPICS);
    const total = Number(target.total);
    clock.mark('setup');
    // Compared at a cut: the replay may have to stop exactly where the live consumer is (replay-cut.ts).
    const cut = new ReplayCut();
    const subscribe = () =>
      subscribeEngine(options.bus, engine, {
        group,
        maxBatch: REPLAY_BATCH,
        // What the live classifier's dead letter did: a chain event passed over holds its chain's clock.
        wrap: (handler) =>
          cut.handler(handler, options.log, (message, err) => engine.deadLettered(message, err.message)),
      });
    const subscription = await subscribe();
    try {
      // Looked at 4 times a second: the end of a replay is not waited for longer than that.
      await consumeToEnds(options.bus, group, CLASSIFIER_TOPICS, target, {
        pollMs: 250,
        onProgress: (done, left) => options.onProgress?.(Number(done), Number(left)),
      });
    } finally {
      await subscription.stop();
    }
    clock.mark('consume');
    await engine.writeResident();
    clock.mark('write');

    // Both at once, each one pass over its two tables, on a snapshot where the live consumer had handled
    // exactly what the replay did.
    const frozen = { verdicts: 'pg_temp.frozen_verdicts', violations: 'pg_temp.frozen_violations' };
    let settled;
    try {
      settled = await settleAtLiveCut(
        {
          pool: options.pool,
          bus: options.bus,
          topics: CLASSIFIER_TOPICS,
          liveGroup: options.liveGroup ?? CLASSIFIER_GROUP,
          replayGroup: group,
          cut,
          resume: subscribe,
          timeoutMs: options.settleTimeoutMs ?? 30_000,
        },
        {
          async freeze(query) {
            await query(`CREATE TEMP TABLE frozen_verdicts AS SELECT * FROM ${live.verdicts}`);
            await query(`CREATE TEMP TABLE frozen_violations AS SELECT * FROM ${live.violations}`);
          },
          async compare(query, copies) {
            // The replay went on to the live positions: what it kept in memory is written again (upserts).
            if (copies) await engine.writeResident();
            const db = { query };
            return Promise.all([
              compareDecisions(db, copies ? frozen.verdicts : live.verdicts, tables.verdicts, 'verdict'),
              compareDecisions(
                db,
                copies ? frozen.violations : live.violations,
                tables.violations,
                'violation',
              ),
            ]);
          },
        },
      );
    } finally {
      did.stop();
    }
    const [verdicts, violations] = settled.result;
    clock.mark('compare');
    if (!options.keep) await options.pool.query(`DROP SCHEMA "${schema}" CASCADE`);
    await options.pool.query('DELETE FROM processed_events WHERE consumer = $1', [group]);
    clock.mark('cleanup');
    return {
      schema,
      seconds: (performance.now() - started) / 1_000,
      phases: clock.seconds,
      messages: total,
      malformed: cut.skipped.malformed,
      notApplied: cut.skipped.failed,
      verdicts,
      violations,
      identical: verdicts.identical && violations.identical,
      exactCut: settled.exact,
      signerMemo,
    };
  } catch (err) {
    // A failed replay leaves nothing behind but what --keep asks for: its tables may be gigabytes.
    if (!options.keep) await options.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await options.pool.query('DELETE FROM processed_events WHERE consumer = $1', [group]);
    throw err;
  }
}

/** The DID answers the live verdicts recorded, by bid (a verdict stored escaped is unescaped: jsonb-nul.ts). */
export async function recordedDidNames(
  pool: Pool,
  verdicts: string,
): Promise<Map<string, SwapVerdict['evidence']['didNames']>> {
  const { rows } = await pool.query<{
    bid_id: string;
    names: SwapVerdict['evidence']['didNames'];
    escaped: boolean;
  }>(`SELECT bid_id, verdict->'evidence'->'didNames' AS names, verdict ? $1 AS escaped FROM ${verdicts}`, [
    NUL_ESCAPED,
  ]);
  return new Map(rows.map((r) => [r.bid_id, r.escaped ? unescapeNul(r.names) : r.names]));
}

/** The two tables joined on bid_id in one pass: counts, and the first 20 keys of each kind of difference. */
export async function compareDecisions(
  pool: Queryable,
  liveTable: string,
  replayTable: string,
  column: string,
): Promise<TableComparison> {
  const keys = (side: string) =>
    `(SELECT array_agg(bid_id) FROM (SELECT bid_id FROM d WHERE side = '${side}' ORDER BY 1 LIMIT 20) x)`;
  const { rows } = await pool.query<{
    live: string;
    replay: string;
    differences: string;
    different: string[] | null;
    only_live: string[] | null;
    only_replay: string[] | null;
  }>(
    `WITH d AS (
       SELECT COALESCE(l.bid_id, r.bid_id) AS bid_id, l.bid_id IS NOT NULL AS in_live, r.bid_id IS NOT NULL AS in_replay,
              CASE WHEN l.bid_id IS NULL THEN 'only_replay' WHEN r.bid_id IS NULL THEN 'only_live'
                   WHEN l.${column} <> r.${column} THEN 'different' END AS side
         FROM ${liveTable} l FULL JOIN ${replayTable} r ON l.bid_id = r.bid_id
     )
     SELECT count(*) FILTER (WHERE in_live)::text AS live, count(*) FILTER (WHERE in_replay)::text AS replay,
            count(side)::text AS differences,
            ${keys('different')} AS different, ${keys('only_live')} AS only_live, ${keys('only_replay')} AS only_replay
       FROM d`,
  );
  const row = rows[0]!;
  return {
    live: Number(row.live),
    replay: Number(row.replay),
    different: row.different ?? [],
    onlyLive: row.only_live ?? [],
    onlyReplay: row.only_replay ?? [],
    identical: Number(row.differences) === 0,
  };
}
