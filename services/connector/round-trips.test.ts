import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EventBus } from '../../shared/bus/port.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { createLogger } from '../../shared/logging/logger.js';
import { allTopics, topicSpec } from '../../topics/index.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { countQueries } from '../../test/support/query-counter.js';
import type { HeightUpdate } from './body-schema.js';
import { HeightStore } from './heights.js';
import type { Ingestor } from './ingest.js';
import { connectorMigrations } from './migrations.js';
import { clearConnectorTables, goldenEventBody, plainPort, testIngestor } from './test-harness.js';

const body = (block: number, logIndex: number) => goldenEventBody('TransferOut', block, logIndex);

/** A chunk ending at `height` with `events` events spread over its blocks. */
function chunk(height: number, events: number): HeightUpdate {
  return {
    type: 'update_height',
    height,
    data: Array.from({ length: events }, (_, i) => body(height - (i % 5), i)),
  } as unknown as HeightUpdate;
}

describe('connector ingestion: database round trips per chunk', () => {
  let db: TestDatabase;
  let database: string;
  let bus: PostgresBus;
  let heights: HeightStore;
  const ingestor = (busFor: EventBus) => testIngestor({ pool: db.pool, bus: busFor, heights }).ingestor;
  /** Statements the chunk costs. */
  const roundTrips = async (ingest: Ingestor, update: HeightUpdate) => {
    const counter = countQueries(database);
    try {
      expect(await ingest.heightUpdate('9006', 'swap', update)).toBe('processed');
    } finally {
      counter.stop();
    }
    return counter.texts;
  };
  const published = async () =>
    Number(
      (
        await db.pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM bus_messages WHERE topic = 'chain.events'`,
        )
      ).rows[0]!.n,
    );

  beforeAll(async () => {
    db = await createTestDatabase([connectorMigrations]);
    database = new URL(db.url).pathname.slice(1);
    bus = new PostgresBus({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
    });
    await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 4)));
    heights = new HeightStore(db.pool);
  });
  beforeEach(async () => {
    await clearConnectorTables(db.pool);
    await heights.init('9006', 'swap', 10);
  });
  afterAll(async () => db?.drop());

  it('postgres log and archive: the same few statements for 1 event and for 50', async () => {
    const ingest = ingestor(bus);
    // First chunk: the stored height is read, then one statement writes everything.
    const first = await roundTrips(ingest, chunk(15, 1));
    expect(first).toHaveLength(2);
    // Later chunks: this process knows the height it wrote, so the write alone (it checks the height).
    const one = await roundTrips(ingest, chunk(20, 1));
    const fifty = await roundTrips(ingest, chunk(25, 50));
    expect(fifty).toHaveLength(one.length);
    expect(one).toHaveLength(1);
    expect(one.some((t) => /^\s*(BEGIN|COMMIT)/i.test(t))).toBe(false);
    expect(await published()).toBe(52);
    expect(await heights.get('9006', 'swap')).toBe(25);
    const archived = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM archive_documents');
    expect(Number(archived.rows[0]!.n)).toBe(52);
  });

  it('any other bus (here: the postgres log behind a plain EventBus): one transaction of fixed size', async () => {
    const plain = plainPort(bus);
    const ingest = ingestor(plain);
    await roundTrips(ingest, chunk(15, 1));
    const one = await roundTrips(ingest, chunk(20, 1));
    const fifty = await roundTrips(ingest, chunk(25, 50));
    expect(fifty).toHaveLength(one.length);
    // Read; BEGIN, height, archive, chain.events, chain.heights, COMMIT.
    expect(one).toHaveLength(7);
    expect(await published()).toBe(52);
  });

  it('a known height is only a hint: held events and heights moved by another process are honoured', async () => {
    const ingest = ingestor(bus);
    await roundTrips(ingest, chunk(15, 1));
    // Another Connector process holds a single event of block 17 (history without merge).
    const held = body(17, 7);
    await db.pool.query(
      `INSERT INTO connector_pending_events (chain_id, stream, event_id, block_number, body)
       VALUES ('9006', 'swap', $1, 17, $2::jsonb)`,
      [`9006:${held.event.transactionHash}:7`, JSON.stringify(held)],
    );
    await ingest.heightUpdate('9006', 'swap', chunk(20, 0));
    expect(await published()).toBe(2);
    const pending = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM connector_pending_events');
    expect(Number(pending.rows[0]!.n)).toBe(0);
    // Another process moved the height past the next chunk: nothing is published twice.
    await db.pool.query(`UPDATE connector_heights SET height = 25`);
    expect(await ingest.heightUpdate('9006', 'swap', chunk(25, 3))).toBe('already processed');
    expect(await published()).toBe(2);
    expect(await ingest.heightUpdate('9006', 'swap', chunk(30, 1))).toBe('processed');
    expect(await published()).toBe(3);
  });
});
