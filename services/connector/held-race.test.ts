/**
 * Two Connector processes share the database (a rolling deploy, or two behind one callback URL): a single
 * event (history without merge) held by one while the other processes the chunk of its block must still be
 * published. Held with 200 "held until its height update", it is never posted again: dropped, it is lost for
 * good (a ConfirmOut lost is a case 5 on a user who confirmed).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import type { EventBus } from '../../shared/bus/port.js';
import { createLogger } from '../../shared/logging/logger.js';
import { allTopics, topicSpec } from '../../topics/index.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import type { EventBody, HeightUpdate } from './body-schema.js';
import { HeightStore, type Stream } from './heights.js';
import { connectorMigrations } from './migrations.js';
import { clearConnectorTables, goldenEventBody, plainPort, testIngestor } from './test-harness.js';

const heartbeat = (height: number, data: EventBody[] = []) =>
  ({ type: 'update_height', height, data }) as unknown as HeightUpdate;

/** A HeightStore that runs `between` once, right after its next read (the other process acts then). */
class PausingHeights extends HeightStore {
  between: (() => Promise<unknown>) | undefined;
  private async pause(): Promise<void> {
    const run = this.between;
    this.between = undefined;
    await run?.();
  }
  override async get(chainId: string, stream: Stream): Promise<number> {
    const height = await super.get(chainId, stream);
    await this.pause();
    return height;
  }
  override async chunkState(chainId: string, stream: Stream, upTo: number) {
    const state = await super.chunkState(chainId, stream, upTo);
    await this.pause();
    return state;
  }
}

describe('connector: a single event held by one process while another processes its chunk', () => {
  let db: TestDatabase;
  let bus: PostgresBus;
  const buses: Array<[string, () => EventBus]> = [
    ['postgres log and archive: one statement', () => bus],
    ['any other bus: one transaction', () => plainPort(bus)],
  ];
  const published = async () =>
    (
      await db.pool.query<{ value: string }>(
        `SELECT value FROM bus_messages WHERE topic = 'chain.events' ORDER BY "offset"`,
      )
    ).rows.map((r) => JSON.parse(r.value).payload.blockNumber as number);

  beforeAll(async () => {
    db = await createTestDatabase([connectorMigrations]);
    bus = new PostgresBus({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
    });
    await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 1)));
  });
  beforeEach(async () => {
    await clearConnectorTables(db.pool);
    await new HeightStore(db.pool).init('9006', 'swap', 10);
  });
  afterAll(async () => db?.drop());

  for (const [name, busFor] of buses) {
    it(`${name}: the other process's chunk commits between the hold's read and its insert`, async () => {
      const heights = new PausingHeights(db.pool);
      const one = testIngestor({ pool: db.pool, bus: busFor(), heights }).ingestor;
      const other = testIngestor({
        pool: db.pool,
        bus: busFor(),
        heights: new HeightStore(db.pool),
      }).ingestor;
      heights.between = () => other.heightUpdate('9006', 'swap', heartbeat(15));
      const outcome = await one.singleEvent('9006', 'swap', goldenEventBody('ConfirmOut', 12));
      expect(outcome).not.toBe('already processed');
      await other.heightUpdate('9006', 'swap', heartbeat(20));
      expect(await published()).toEqual([12]);
    });

    it(`${name}: the hold commits between the other process's read and its chunk's write`, async () => {
      const heights = new PausingHeights(db.pool);
      const other = testIngestor({ pool: db.pool, bus: busFor(), heights }).ingestor;
      const one = testIngestor({ pool: db.pool, bus: busFor(), heights: new HeightStore(db.pool) }).ingestor;
      heights.between = () => one.singleEvent('9006', 'swap', goldenEventBody('ConfirmOut', 12));
      // A chain client retries a chunk answered 503 (the height moved concurrently).
      await other.heightUpdate('9006', 'swap', heartbeat(15)).catch(() => 'retried');
      await other.heightUpdate('9006', 'swap', heartbeat(15));
      await other.heightUpdate('9006', 'swap', heartbeat(20));
      expect(await published()).toEqual([12]);
    });

    it(`${name}: a hold left behind a chunk's write is published late with the next chunk, once`, async () => {
      // What remains when the hold commits while the other process's write is in flight (after its
      // statement's snapshot): a held row of a block the stream passed.
      const { ingestor } = testIngestor({ pool: db.pool, bus: busFor(), heights: new HeightStore(db.pool) });
      expect(
        await ingestor.heightUpdate('9006', 'swap', heartbeat(15, [goldenEventBody('TransferOut', 14)])),
      ).toBe('processed');
      const passed = goldenEventBody('ConfirmOut', 12);
      const again = goldenEventBody('TransferOut', 14);
      for (const b of [passed, again])
        await db.pool.query(
          `INSERT INTO connector_pending_events (chain_id, stream, event_id, block_number, body)
           VALUES ('9006', 'swap', $1, $2, $3::json)`,
          [
            `9006:${b.event.transactionHash}:${Number(b.event.logIndex)}`,
            Number(b.event.blockNumber),
            JSON.stringify(b),
          ],
        );
      expect(await ingestor.heightUpdate('9006', 'swap', heartbeat(20))).toBe('processed');
      // Block 14's was published with its chunk (archived): not again.
      expect(await published()).toEqual([14, 12]);
      const heightsPublished = (
        await db.pool.query<{ value: string }>(
          `SELECT value FROM bus_messages WHERE topic = 'chain.heights' ORDER BY "offset"`,
        )
      ).rows.map((r) => JSON.parse(r.value).payload);
      // The next height names it: the Classifier takes that height only after it.
      expect(heightsPublished.at(-1)).toMatchObject({
        height: 20,
        lastEventId: `9006:${passed.event.transactionHash.toLowerCase()}:0`,
      });
      expect((await db.pool.query('SELECT 1 FROM connector_pending_events')).rows).toEqual([]);
      expect(await ingestor.singleEvent('9006', 'swap', passed)).toBe('already processed');
    });
  }
});
