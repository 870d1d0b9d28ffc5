import { createLogger } from '../../shared/logging/logger.js';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import { createTestDatabase } from '../support/database.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { busConformanceSuite } from './bus.js';

const kafka = await kafkaForTests();
if (kafka.skipReason) announceSkip('EventBus conformance: kafka', kafka.skipReason);

busConformanceSuite(
  `kafka${kafka.skipReason ? ` (skipped: ${kafka.skipReason})` : ''}`,
  async () => {
    const db = await createTestDatabase();
    const bus = new KafkaBus({
      brokers: kafka.target!.brokers,
      clientId: 'conformance',
      log: createLogger({ level: 'warn' }),
    });
    return {
      bus,
      pool: db.pool,
      async cleanup() {
        await bus.close();
        await db.drop();
        await kafka.stop();
      },
    };
  },
  { skip: kafka.skipReason },
);
