import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import type { Archive } from '../../shared/archive/port.js';
import { PostgresArchive } from '../../shared/archive/postgres-archive.js';
import type { EventBus } from '../../shared/bus/port.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { loadConfig, type SectionName } from '../../shared/config/index.js';
import { createLogger } from '../../shared/logging/logger.js';
import type { ServiceContext } from '../../shared/runtime/service.js';
import { allTopics, topicSpec } from '../../topics/index.js';
import type { TestDatabase } from './database.js';
import { kafkaForTests, mongoForTests } from './external.js';

/**
 * embedded: the postgres log and the JSONB archive on the test database. production: a real Kafka broker and
 * a MongoDB-compatible server (FerretDB) started by the test setup, PostgreSQL for effects and positions.
 */
export type Profile = 'embedded' | 'production';

/** Why the production profile cannot run here, or undefined when it can. */
export function productionSkipReason(): string | undefined {
  return kafkaForTests().skipReason ?? mongoForTests().skipReason;
}

/** What the runner would hand a service, on a test database, from inline TOML. */
export async function serviceContext(
  db: TestDatabase,
  toml: string,
  require: readonly SectionName[],
  profile: Profile = 'embedded',
): Promise<ServiceContext & { close(): Promise<void> }> {
  const log = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const config = loadConfig({ text: toml, require, env: { DATABASE_URL: db.url } });
  let bus: EventBus;
  let archive: Archive;
  if (profile === 'production') {
    const { KafkaBus } = await import('../../shared/bus/kafka/kafka-bus.js');
    const { MongoArchive } = await import('../../shared/archive/mongodb-archive.js');
    const suffix = randomBytes(4).toString('hex');
    bus = new KafkaBus({
      brokers: kafkaForTests().target!.brokers,
      clientId: `test-${suffix}`,
      log,
      pool: db.pool,
      connectionString: db.url,
      publishTimeoutMs: 15_000,
      // Topics and groups of this context only: other test files publish to the same logical topics
      // (chain.events, …) on the same broker, and this context reads them from their start.
      topicPrefix: `e2e-${suffix}.`,
    });
    archive = await MongoArchive.connect({ ...mongoForTests().target!, db: `e2e_${suffix}` });
  } else {
    bus = new PostgresBus({ pool: db.pool, connectionString: db.url, log });
    archive = new PostgresArchive(db.pool);
  }
  await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 4)));
  return {
    config,
    log,
    db: db.pool,
    dbUrl: db.url,
    bus,
    archive,
    metrics: new Registry(),
    trackConsumerGroup: () => undefined,
    async close() {
      await bus.close();
      await archive.close();
    },
  };
}
