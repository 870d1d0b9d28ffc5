import { Registry } from 'prom-client';
import { PostgresArchive } from '../../shared/archive/postgres-archive.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { loadConfig, type SectionName } from '../../shared/config/index.js';
import { createLogger } from '../../shared/logging/logger.js';
import type { ServiceContext } from '../../shared/runtime/service.js';
import { allTopics, topicSpec } from '../../topics/index.js';
import type { TestDatabase } from './database.js';

/** What the runner would hand a service, on a test database, from inline TOML. */
export async function serviceContext(
  db: TestDatabase,
  toml: string,
  require: readonly SectionName[],
): Promise<ServiceContext & { close(): Promise<void> }> {
  const log = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const config = loadConfig({ text: toml, require, env: { DATABASE_URL: db.url } });
  const bus = new PostgresBus({ pool: db.pool, connectionString: db.url, log });
  await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 4)));
  return {
    config,
    log,
    db: db.pool,
    dbUrl: db.url,
    bus,
    archive: new PostgresArchive(db.pool),
    metrics: new Registry(),
    trackConsumerGroup: () => undefined,
    close: () => bus.close(),
  };
}
