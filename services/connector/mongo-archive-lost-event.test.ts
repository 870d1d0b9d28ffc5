import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoArchive } from '../../shared/archive/mongodb-archive.js';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import { createLogger } from '../../shared/logging/logger.js';
import { allTopics, topicSpec } from '../../topics/index.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { announceSkip, kafkaForTests, mongoForTests } from '../../test/support/external.js';
import type { EventBody, HeightUpdate } from './body-schema.js';
import { HeightStore } from './heights.js';
import { connectorMigrations } from './migrations.js';
import { goldenEventBody, testIngestor } from './test-harness.js';

const kafka = kafkaForTests();
const mongo = mongoForTests();
const skip = kafka.skipReason ?? mongo.skipReason;
if (skip) announceSkip('connector on Kafka + MongoDB: a chunk that failed after its archive write', skip);

const heartbeat = (height: number, data: EventBody[] = []) =>
  ({ type: 'update_height', height, data }) as unknown as HeightUpdate;

/**
 * Production profile (Kafka outbox + MongoDB archive): a chunk's write was one PostgreSQL transaction with the
 * archive written inside it, but MongoDB writes at once. When that transaction failed after the archive write
 * (database blip, process killed before COMMIT), the body was archived although its event was never published.
 * lateEvent() takes "archived" as "published": once the stream's height had passed the event's block without
 * it (history without merge: its post fails, the data-less height update goes through, the post is retried —
 * the case late-events.test.ts covers on postgres), the retried post was answered "already processed" and the
 * event was never published: the swap's TransferOut lost for good. MongoDB documents are now written after the
 * chunk's transaction commits.
 */
describe.skipIf(skip)('connector on Kafka + MongoDB: a chunk that failed after its archive write', () => {
  let db: TestDatabase;
  let bus: KafkaBus;
  let archive: MongoArchive;
  let heights: HeightStore;

  beforeAll(async () => {
    db = await createTestDatabase([connectorMigrations]);
    bus = new KafkaBus({
      brokers: kafka.target!.brokers,
      clientId: 'mongo-lost-event-test',
      log: createLogger({ level: 'silent' }),
      pool: db.pool,
      connectionString: db.url,
      publishTimeoutMs: 10_000,
    });
    await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 1)));
    archive = await MongoArchive.connect({
      ...mongo.target!,
      db: `lost_${randomBytes(4).toString('hex')}`,
    });
    heights = new HeightStore(db.pool);
    await heights.init('9006', 'swap', 10);
    // The first outbox write fails, as a connection lost before COMMIT would (a sequence is not rolled back).
    await db.pool.query(`
      CREATE SEQUENCE fail_outbox_once;
      CREATE FUNCTION fail_outbox_once() RETURNS trigger AS $$
      BEGIN
        IF nextval('fail_outbox_once') = 1 THEN RAISE EXCEPTION 'connection lost before COMMIT'; END IF;
        RETURN NEW;
      END $$ LANGUAGE plpgsql;
      CREATE TRIGGER fail_outbox_once BEFORE INSERT ON bus_outbox
        FOR EACH ROW EXECUTE FUNCTION fail_outbox_once();`);
  }, 120_000);
  afterAll(async () => {
    await bus?.close();
    await archive?.close();
    await db?.drop();
  });

  it('an event whose chunk failed after the archive write is still published when posted again', async () => {
    const { ingestor } = testIngestor({ pool: db.pool, bus, heights, archive });
    const transferOut = goldenEventBody('TransferOut', 12);
    // The live chunk with the event: MongoDB stores the body, then the transaction fails.
    await expect(ingestor.heightUpdate('9006', 'swap', heartbeat(15, [transferOut]))).rejects.toThrow(
      'connection lost before COMMIT',
    );
    expect(await heights.get('9006', 'swap')).toBe(10);
    // History without merge for the gap: the event's own post fails (not shown), its data-less height update
    // goes through, then the chain client retries the event's post.
    expect(await ingestor.heightUpdate('9006', 'swap', heartbeat(15), { history: true })).toBe('processed');
    expect(await heights.get('9006', 'swap')).toBe(15);
    const outcome = await ingestor.singleEvent('9006', 'swap', transferOut);
    // Nothing ever published it: it must go out now.
    expect(outcome).toBe('published late');
    // And a chunk that commits archives its documents (after the commit).
    const confirm = goldenEventBody('ConfirmOut', 17);
    expect(await ingestor.heightUpdate('9006', 'swap', heartbeat(20, [confirm]))).toBe('processed');
    expect((await archive.list('chain-events')).length).toBe(2);
  }, 120_000);
});
