import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Archive } from '../../shared/archive/port.js';
import { PostgresArchive } from '../../shared/archive/postgres-archive.js';
import type { EventBus } from '../../shared/bus/port.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { createLogger } from '../../shared/logging/logger.js';
import { allTopics, topicSpec } from '../../topics/index.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import type { EventBody, HeightUpdate } from './body-schema.js';
import { HeightStore } from './heights.js';
import { connectorMigrations } from './migrations.js';
import { clearConnectorTables, goldenEventBody, plainPort, testIngestor } from './test-harness.js';

const body = goldenEventBody;

const heartbeat = (height: number, data: EventBody[] = []) =>
  ({ type: 'update_height', height, data }) as unknown as HeightUpdate;

/**
 * History without merge posts each event, then its chunk's data-less height update. A chain client that
 * retries an event post after that update (the original retries a delivery up to 10 times) posts it after
 * its blocks were processed without it: it must be published late, not answered "already processed".
 */
describe('connector: single events posted after their blocks were processed', () => {
  let db: TestDatabase;
  let bus: PostgresBus;
  let heights: HeightStore;
  /** The postgres log itself (one statement), and behind a plain EventBus (one transaction). */
  const buses: Array<[string, () => EventBus]> = [
    ['postgres log and archive: one statement', () => bus],
    ['any other bus: one transaction', () => plainPort(bus)],
  ];
  const messages = async (topic: string) =>
    (
      await db.pool.query<{ value: string }>(
        `SELECT value FROM bus_messages WHERE topic = $1 ORDER BY "offset"`,
        [topic],
      )
    ).rows.map((r) => JSON.parse(r.value));

  beforeAll(async () => {
    db = await createTestDatabase([connectorMigrations]);
    bus = new PostgresBus({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
    });
    await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 1)));
    heights = new HeightStore(db.pool);
  });
  beforeEach(async () => {
    await clearConnectorTables(db.pool);
    await heights.init('9006', 'swap', 10);
  });
  afterAll(async () => db?.drop());

  for (const [name, busFor] of buses)
    it(`${name}: published once, late, and named by the next height`, async () => {
      const registry = new Registry();
      const { ingestor } = testIngestor({ pool: db.pool, bus: busFor(), heights, registry });
      // Block 12's event is held, block 13's post fails; the chunk's data-less height update follows.
      const held = body('TransferOut', 12);
      const retried = body('ConfirmOut', 13, 1);
      expect(await ingestor.singleEvent('9006', 'swap', held)).toBe('held until its height update');
      expect(await ingestor.heightUpdate('9006', 'swap', heartbeat(15))).toBe('processed');
      // The retried post comes after it.
      expect(await ingestor.singleEvent('9006', 'swap', retried)).toBe('published late');
      let events = await messages('chain.events');
      expect(events.map((e) => [e.payload.kind, e.payload.blockNumber])).toEqual([
        ['TransferOut', 12],
        ['ConfirmOut', 13],
      ]);
      // Posted again, either of them: nothing more.
      expect(await ingestor.singleEvent('9006', 'swap', retried)).toBe('already processed');
      expect(await ingestor.singleEvent('9006', 'swap', held)).toBe('already processed');
      expect(await messages('chain.events')).toHaveLength(2);
      // The stream goes on; the next height names the late event (the classifier takes it only after it).
      expect(await ingestor.heightUpdate('9006', 'swap', heartbeat(20, [body('TransferOut', 18)]))).toBe(
        'processed',
      );
      expect(await ingestor.heightUpdate('9006', 'swap', heartbeat(25))).toBe('processed');
      events = await messages('chain.events');
      expect(events.map((e) => e.payload.blockNumber)).toEqual([12, 13, 18]);
      const named = (await messages('chain.heights')).map((h) => [h.payload.height, h.payload.lastEventId]);
      expect(named).toEqual([
        [15, events[0].id],
        [20, events[2].id],
        [25, events[2].id],
      ]);
      const late = await registry.getSingleMetric('connector_late_events_total')!.get();
      expect(late.values.map((v) => v.value)).toEqual([1]);
    });

  it('an archive outside the transaction (MongoDB) never makes a failed late publish read as done', async () => {
    // As MongoDB: putMany writes at once, whatever transaction it is given.
    const postgres = new PostgresArchive(db.pool);
    const outside: Archive = {
      kind: 'mongodb',
      put: (c, id, d) => postgres.put(c, id, d),
      putMany: (c, documents) => postgres.putMany(c, documents),
      get: (c, id) => postgres.get(c, id),
      list: (c, o) => postgres.list(c, o),
      count: (c) => postgres.count(c),
      close: async () => undefined,
    };
    // A bus whose next publish fails (its transaction rolls back).
    let failNext = false;
    const flaky: EventBus = {
      ...plainPort(bus),
      publish: async (topic, messages, options) => {
        if (failNext) {
          failNext = false;
          throw new Error('connection lost before COMMIT');
        }
        return bus.publish(topic, messages, options);
      },
    };
    const { ingestor } = testIngestor({ pool: db.pool, bus: flaky, heights, archive: outside });
    expect(await ingestor.heightUpdate('9006', 'swap', heartbeat(15))).toBe('processed');
    const late = body('TransferOut', 14);
    failNext = true;
    await expect(ingestor.singleEvent('9006', 'swap', late)).rejects.toThrow('connection lost');
    // The chain client posts it again: published now, once.
    expect(await ingestor.singleEvent('9006', 'swap', late)).toBe('published late');
    expect(await ingestor.singleEvent('9006', 'swap', late)).toBe('already processed');
    expect((await messages('chain.events')).map((e) => e.payload.blockNumber)).toEqual([14]);
    expect(await outside.count('chain-events')).toBe(1);
  });

  it('the height message right after a late event names it', async () => {
    const { ingestor } = testIngestor({ pool: db.pool, bus, heights });
    expect(await ingestor.heightUpdate('9006', 'swap', heartbeat(15))).toBe('processed');
    expect(await ingestor.singleEvent('9006', 'swap', body('TransferOut', 14))).toBe('published late');
    expect(await ingestor.heightUpdate('9006', 'swap', heartbeat(20))).toBe('processed');
    const [event] = await messages('chain.events');
    const heightsPublished = await messages('chain.heights');
    expect(heightsPublished.map((h) => [h.payload.height, h.payload.lastEventId])).toEqual([
      [15, null],
      [20, event.id],
    ]);
  });

  it('a chunk overlapping processed blocks archives only what it publishes', async () => {
    const { ingestor } = testIngestor({ pool: db.pool, bus, heights });
    await db.pool.query(`UPDATE connector_heights SET height = 12`);
    // Blocks 11 and 12 are processed (their events, if any, came with the chunk that got there).
    const overlapped = body('TransferOut', 12);
    expect(
      await ingestor.heightUpdate('9006', 'swap', heartbeat(15, [overlapped, body('ConfirmOut', 14)])),
    ).toBe('processed');
    const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM archive_documents`);
    expect(rows[0]!.n).toBe(1);
    // So block 12's event, if its chunk really went on without it, is still published when posted.
    expect(await ingestor.singleEvent('9006', 'swap', overlapped)).toBe('published late');
  });
});
