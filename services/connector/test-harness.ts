/** Test support: the Connector's ingestor and callback routes on a test database (postgres log and archive). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Counter, Gauge, Registry } from 'prom-client';
import { PostgresArchive } from '../../shared/archive/postgres-archive.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import type { EventBus } from '../../shared/bus/port.js';
import type { Pool } from '../../shared/db/pool.js';
import { createLogger, type Logger } from '../../shared/logging/logger.js';
import { createHttpServer } from '../../shared/runtime/http.js';
import { allTopics, topicSpec } from '../../topics/index.js';
import type { EventBody } from './body-schema.js';
import { HeightStore } from './heights.js';
import { Ingestor, type IngestOptions } from './ingest.js';
import { countRejections, registerCallbackRoutes } from './routes.js';

/** The swap contract of the test chain 9006 (a devnet address; no chain runs behind it). */
export const TEST_SWAP_CONTRACT = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512';
/** Its reputation contract: the test chain has both streams (the Connector follows reputation only with one). */
export const TEST_REPUTATION_CONTRACT = '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0';

const fixtures = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../../test/fixtures/otmoic-relay.json'), 'utf8'),
) as { events: Array<{ type?: string; topic0: string; log_data: string; event_parse: unknown }> };

/**
 * A chain-client body in the original's shape around the golden `type` event of the relay fixtures, in
 * `block` of chain 9006 (its transaction hash made from the block and log index, its time 1_700_000_000 + block).
 */
export function goldenEventBody(type: string, block: number, logIndex = 0): EventBody {
  const golden = fixtures.events.find((v) => v.type === type)!;
  const event = {
    address: TEST_SWAP_CONTRACT,
    topics: [golden.topic0],
    data: golden.log_data,
    blockNumber: '0x' + block.toString(16),
    transactionHash: '0x' + (block * 1000 + logIndex).toString(16).padStart(64, '0'),
    transactionIndex: '0x0',
    blockHash: '0x' + 'bb'.repeat(32),
    logIndex: '0x' + logIndex.toString(16),
    removed: false,
  };
  return {
    event,
    tx: { from: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC', status: '0x1', logs: [event] },
    block: { number: event.blockNumber, timestamp: '0x' + (1_700_000_000 + block).toString(16) },
    type,
    transfer_info: '{}',
    event_raw: JSON.stringify(event),
    event_parse: golden.event_parse,
    chain_id: '9006',
  } as unknown as EventBody;
}

/** `bus` behind the bare EventBus port: the Ingestor writes through it as through any bus (a transaction a chunk). */
export function plainPort(bus: EventBus): EventBus {
  return {
    kind: bus.kind,
    ensureTopics: (s) => bus.ensureTopics(s),
    publish: (t, m, o) => bus.publish(t, m, o),
    subscribe: (o) => bus.subscribe(o),
    seek: (g, t, p) => bus.seek(g, t, p),
    lag: (g, t) => bus.lag(g, t),
    close: async () => undefined,
  };
}

/** Empties what ingestion writes (heights, held events, the log, the archive) between tests. */
export async function clearConnectorTables(pool: Pool): Promise<void> {
  await pool.query(
    `DELETE FROM connector_heights; DELETE FROM bus_messages; DELETE FROM archive_documents;
     DELETE FROM connector_pending_events`,
  );
}

/** The block timestamp a test ingestor is told for `height` (it reads no chain). */
export const testBlockTimestamp = (height: number) => 1_700_000_100 + height;

/** Metrics of an ingestor under test, in `registry` under their production names. */
function ingestMetrics(registry: Registry) {
  const gauge = (name: string) =>
    new Gauge({ name, help: name, labelNames: ['chain', 'stream'], registers: [registry] });
  return {
    height: gauge('connector_height'),
    lag: gauge('connector_lag_blocks'),
    events: new Counter({
      name: 'connector_events_total',
      help: 'events',
      labelNames: ['chain', 'type'],
      registers: [registry],
    }),
    rejected: new Counter({
      name: 'connector_rejected_bodies_total',
      help: 'refusals',
      labelNames: ['chain', 'reason'],
      registers: [registry],
    }),
    blockTimeUnread: new Counter({
      name: 'connector_block_time_unread_total',
      help: 'chunks without their height message',
      labelNames: ['chain', 'stream'],
      registers: [registry],
    }),
    late: new Counter({
      name: 'connector_late_events_total',
      help: 'late events',
      labelNames: ['chain', 'stream'],
      registers: [registry],
    }),
    foreign: new Counter({
      name: 'connector_foreign_events_total',
      help: 'foreign contract logs left out',
      labelNames: ['chain'],
      registers: [registry],
    }),
  };
}

/**
 * An Ingestor for chain 9006 (swap contract TEST_SWAP_CONTRACT, reputation contract TEST_REPUTATION_CONTRACT) on any bus, archiving into PostgreSQL, with
 * block timestamps made up from the height.
 */
export function testIngestor(options: {
  pool: Pool;
  bus: EventBus;
  heights: HeightStore;
  registry?: Registry;
  log?: Logger;
  requestBackfill?: IngestOptions['requestBackfill'];
  /** Default: 100000 blocks, and the block time read's own defaults. */
  limits?: Partial<Pick<IngestOptions, 'maxBlocksAhead' | 'blockTimeDeadlineMs' | 'blockTimeRetryMs'>>;
  /** Default: testBlockTimestamp. */
  blockTimestamp?: IngestOptions['blockTimestamp'];
  /** Default: 'async', the configuration's default. */
  chunkCommit?: IngestOptions['chunkCommit'];
  /** Default: the postgres archive of `pool`. */
  archive?: IngestOptions['archive'];
  /** The chain's RPC for gaps read by the Connector (Ingestor.fillFromRpc); default: none. */
  rpc?: IngestOptions['rpc'];
}) {
  const metrics = ingestMetrics(options.registry ?? new Registry());
  const ingestor = new Ingestor({
    pool: options.pool,
    bus: options.bus,
    archive: options.archive ?? new PostgresArchive(options.pool),
    heights: options.heights,
    chains: new Map([
      ['9006', { systemChainId: '9006', swap: TEST_SWAP_CONTRACT, reputation: TEST_REPUTATION_CONTRACT }],
    ]),
    log: options.log ?? createLogger({ level: 'silent' }),
    metrics,
    blockTimestamp: options.blockTimestamp ?? (async (_chain, height) => testBlockTimestamp(height)),
    requestBackfill: options.requestBackfill ?? (() => undefined),
    maxBlocksAhead: options.limits?.maxBlocksAhead ?? 100_000,
    blockTimeDeadlineMs: options.limits?.blockTimeDeadlineMs,
    blockTimeRetryMs: options.limits?.blockTimeRetryMs,
    chunkCommit: options.chunkCommit ?? 'async',
    rpc: options.rpc,
  });
  return { ingestor, metrics };
}

/**
 * Callbacks at `/callback/{chainId}/{stream}` for chain 9006 (as testIngestor's), block
 * timestamps made up from the height, backfill requests recorded instead of sent. Not started on a port:
 * `app.inject`, or `app.listen` for a real client.
 */
export async function startTestConnector(
  db: { pool: Pool; url: string },
  options: {
    requestBackfill?: IngestOptions['requestBackfill'];
    limits?: Partial<Pick<IngestOptions, 'maxBlocksAhead' | 'blockTimeDeadlineMs' | 'blockTimeRetryMs'>>;
    blockTimestamp?: IngestOptions['blockTimestamp'];
    /** Default: the postgres archive of the test database. */
    archive?: IngestOptions['archive'];
  } = {},
) {
  const log = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const bus = new PostgresBus({ pool: db.pool, connectionString: db.url, log });
  await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 4)));
  const registry = new Registry();
  const heights = new HeightStore(db.pool);
  const { ingestor, metrics } = testIngestor({
    pool: db.pool,
    bus,
    heights,
    registry,
    log,
    requestBackfill: options.requestBackfill,
    limits: options.limits,
    blockTimestamp: options.blockTimestamp,
    archive: options.archive,
  });
  const app = createHttpServer({ service: 'connector', log, metrics: registry, db: db.pool });
  registerCallbackRoutes(app, '/callback', ingestor, countRejections(metrics.rejected));
  await app.ready();
  return {
    app,
    bus,
    heights,
    ingestor,
    registry,
    async close() {
      await app.close();
      await bus.close();
    },
  };
}
