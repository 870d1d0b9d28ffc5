import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import { createTestDatabase } from '../support/database.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { kafkaProblem, startKafka } from '../support/kafka.js';
import { busConformanceSuite } from './bus.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('EventBus conformance: kafka', kafka.skipReason);
const log = createLogger({ level: (process.env.BUS_TEST_LOG as 'warn') ?? 'silent' });
// The whole suite runs under a topic prefix of this file's own, so every operation is proven under one (the
// unprefixed bus is covered by test/bus/kafka-topic-prefix.test.ts).
const prefix = `conf-${randomBytes(4).toString('hex')}.`;

busConformanceSuite(
  `kafka${kafka.skipReason ? ` (skipped: ${kafka.skipReason})` : ''}`,
  async (observer) => {
    const db = await createTestDatabase();
    const make = (brokers: string[], database = db) =>
      new KafkaBus({
        brokers,
        clientId: 'conformance',
        log,
        pool: database.pool,
        connectionString: database.url,
        publishTimeoutMs: 10_000,
        positionCheckMs: 200,
        observer,
        topicPrefix: prefix,
      });
    const bus = make(kafka.target!.brokers);
    return {
      bus,
      pool: db.pool,
      async ownServer() {
        const problem = await kafkaProblem();
        if (problem) return { skip: problem };
        // A broker of its own, which the test stops and starts; the bus is made before it runs.
        const broker = await startKafka();
        await broker.stop(0);
        const ownDb = await createTestDatabase();
        return {
          bus: make(broker.brokers, ownDb),
          pool: ownDb.pool,
          stopServer: () => broker.stop(0),
          startServer: () => broker.start(),
          close: async () => {
            await broker.close();
            await ownDb.drop();
          },
        };
      },
      async cleanup() {
        await bus.close();
        await db.drop();
      },
    };
  },
  { skip: kafka.skipReason, serverOutage: true },
);

// After the suite (describes run in order): what it made on the broker is under its prefix, nothing bare.
describe.skipIf(kafka.skipReason)('EventBus conformance: kafka names on the broker', () => {
  it("every topic and consumer group the suite made is under the file's prefix", async () => {
    const admin = new Kafka({ brokers: kafka.target!.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const topics = await admin.listTopics();
      const mine = topics.filter((t) => t.startsWith(prefix));
      expect(mine.length).toBeGreaterThan(10);
      expect(mine.filter((t) => t.endsWith('.dlq')).length).toBeGreaterThan(0);
      // The suite's logical names (conf-…, …) exist only under the prefix.
      const logical = new Set(mine.map((t) => t.slice(prefix.length)));
      expect(topics.filter((t) => logical.has(t))).toEqual([]);
      const { groups } = await admin.listGroups();
      expect(groups.filter((g) => g.groupId.startsWith(prefix)).length).toBeGreaterThan(0);
    } finally {
      await admin.disconnect();
    }
  });
});
