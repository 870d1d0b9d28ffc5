import { createLogger } from '../../shared/logging/logger.js';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import { createTestDatabase } from '../support/database.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { kafkaProblem, startKafka } from '../support/kafka.js';
import { busConformanceSuite } from './bus.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('EventBus conformance: kafka', kafka.skipReason);
const log = createLogger({ level: (process.env.BUS_TEST_LOG as 'warn') ?? 'silent' });

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
