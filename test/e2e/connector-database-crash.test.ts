import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../shared/bus/port.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { startEmbeddedPostgres, type EmbeddedServer } from '../../shared/db/embedded.js';
import { migrate } from '../../shared/db/migrate.js';
import { coreMigrations } from '../../shared/db/migrations/core.js';
import { createPool, type Pool } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logging/logger.js';
import { freePort } from '../../shared/net/free-port.js';
import { allTopics, topicSpec } from '../../topics/index.js';
import type { HeightUpdate } from '../../services/connector/body-schema.js';
import { HeightStore } from '../../services/connector/heights.js';
import type { IngestOptions } from '../../services/connector/ingest.js';
import { connectorMigrations } from '../../services/connector/migrations.js';
import {
  clearConnectorTables,
  goldenEventBody,
  plainPort,
  testIngestor,
} from '../../services/connector/test-harness.js';

/** A chunk of `height` holding one TransferOut in each of `blocks` (logIndex = position). */
const chunk = (height: number, blocks: number[]): HeightUpdate =>
  ({
    type: 'update_height',
    height,
    data: blocks.map((block, i) => goldenEventBody('TransferOut', block, i)),
  }) as unknown as HeightUpdate;

const STORED = 10;
/** Answered 200 before the crash. */
const answered = [chunk(15, [12, 14]), chunk(20, [18, 20])];
/** The chain client's next live chunk after the crash. */
const next = chunk(25, [23]);

/**
 * A PostgreSQL crash (immediate stop) right after chunks were answered 200. With `chunkCommit` 'async' their
 * writes had not reached disk: the crash loses them whole, the stored height with them, so the chain client's
 * next chunk opens a gap, the blocks are asked through history and every event is published exactly once.
 * The Connector process lives on (its in-memory hint of the height is stale). 'sync' loses nothing. The
 * server is this file's own: `wal_writer_delay` 10 s keeps unflushed commits in memory until the crash.
 */
describe('connector: a database crash after chunks were answered', () => {
  let dir: string;
  let port: number;
  let server: EmbeddedServer;
  let pool: Pool;
  const log = createLogger({ level: 'silent' });
  const start = async () => {
    server = await startEmbeddedPostgres({
      dataDir: path.join(dir, 'data'),
      port,
      database: 'connector_crash',
      settings: { wal_writer_delay: '10000', autovacuum: 'off' },
    });
    pool = createPool(server.url, { max: 4 });
  };
  const crash = async () => {
    await server.stop('immediate');
    // Its connections are gone: a new pool for the restarted server.
    await pool.end().catch(() => undefined);
    await start();
  };
  // The Ingestor and its bus take the pool through a getter: the same objects outlive the restart.
  const current = new Proxy({} as Pool, {
    get: (_, key) => {
      const value = Reflect.get(pool, key);
      return typeof value === 'function' ? value.bind(pool) : value;
    },
  });
  const publishedIds = async () =>
    (
      await pool.query<{ value: string }>(
        `SELECT value FROM bus_messages WHERE topic = 'chain.events' ORDER BY partition, "offset"`,
      )
    ).rows.map((r) => (JSON.parse(r.value) as { id: string }).id);
  const archived = async () =>
    Number((await pool.query(`SELECT count(*) AS n FROM archive_documents`)).rows[0]!.n);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-test-crash-'));
    await chmod(dir, 0o755); // the postgres OS user must reach the data dir inside it
    port = await freePort();
    await start();
    await migrate(pool, [coreMigrations, connectorMigrations]);
  }, 120_000);
  afterAll(async () => {
    await pool?.end().catch(() => undefined);
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Ingests `answered`, crashes the server, then the next chunk; returns what happened. */
  const scenario = async (chunkCommit: IngestOptions['chunkCommit'], plain: boolean) => {
    const backfills: Array<[number, number]> = [];
    const liveBus = new PostgresBus({ pool: current, connectionString: server.url, log });
    await liveBus.ensureTopics(allTopics.map((t) => topicSpec(t, 4)));
    await clearConnectorTables(pool);
    await new HeightStore(pool).init('9006', 'swap', STORED);
    const { ingestor } = testIngestor({
      pool: current,
      bus: plain ? plainPort(liveBus as EventBus) : liveBus,
      heights: new HeightStore(current),
      log,
      chunkCommit,
      requestBackfill: (_chain, _stream, from, to) => backfills.push([from, to]),
    });
    for (const update of answered)
      expect(await ingestor.heightUpdate('9006', 'swap', update)).toBe('processed');
    const before = await publishedIds();
    await crash();
    const heights = new HeightStore(pool);
    const afterCrash = {
      height: await heights.get('9006', 'swap'),
      events: (await publishedIds()).length,
      archived: await archived(),
    };
    const outcome = await ingestor.heightUpdate('9006', 'swap', next);
    return { ingestor, before, afterCrash, outcome, backfills, liveBus };
  };

  for (const [path, plain] of [
    ['one statement (postgres log and archive)', false],
    ['a transaction (any other bus)', true],
  ] as const) {
    it(`async, ${path}: the lost chunks are fetched again, each event published once`, async () => {
      // The WAL writer's own wake every 10 s flushes what waits: if it fell between the chunks and the crash
      // (a few ms of 10 s), nothing was lost and the scenario is run again. With synchronous commits every
      // attempt keeps the chunks and the assertion below fails.
      let run = await scenario('async', plain);
      for (let attempt = 1; attempt < 3 && run.afterCrash.height !== STORED; attempt++) {
        await run.liveBus.close();
        run = await scenario('async', plain);
      }
      expect(run.before).toHaveLength(4);
      // Lost whole: height, archive and messages together.
      expect(run.afterCrash).toEqual({ height: STORED, events: 0, archived: 0 });
      expect(run.outcome).toBe('gap: backfill requested');
      expect(run.backfills).toEqual([[STORED, 25]]);
      // The history the Connector asked for, chunk by chunk.
      for (const update of [...answered, next])
        expect(await run.ingestor.heightUpdate('9006', 'swap', update, { history: true })).toBe('processed');
      const ids = await publishedIds();
      expect(ids).toHaveLength(5);
      expect(new Set(ids).size).toBe(5);
      expect(ids.slice(0, 4).sort()).toEqual([...run.before].sort());
      expect(await new HeightStore(pool).get('9006', 'swap')).toBe(25);
      expect(await archived()).toBe(5);
      await run.liveBus.close();
    }, 120_000);

    it(`sync, ${path}: nothing answered is lost`, async () => {
      const run = await scenario('sync', plain);
      expect(run.afterCrash).toEqual({ height: 20, events: 4, archived: 4 });
      expect(run.outcome).toBe('processed');
      expect(run.backfills).toEqual([]);
      expect(await publishedIds()).toHaveLength(5);
      await run.liveBus.close();
    }, 120_000);
  }
});
