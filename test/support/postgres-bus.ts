import { afterAll, beforeAll } from 'vitest';
import type { TopicSpec } from '../../shared/bus/port.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from './database.js';

/**
 * For a describe block: a postgres log on a fresh test database with `topics`, made before its tests, closed
 * and dropped after them. Read `bus` and `db` inside tests (they are set by then).
 */
export function usePostgresBus(topics: readonly TopicSpec[] = []): { db: TestDatabase; bus: PostgresBus } {
  const context = {} as { db: TestDatabase; bus: PostgresBus };
  beforeAll(async () => {
    context.db = await createTestDatabase();
    context.bus = new PostgresBus({
      pool: context.db.pool,
      connectionString: context.db.url,
      log: createLogger({ level: 'silent' }),
    });
    if (topics.length > 0) await context.bus.ensureTopics(topics);
  });
  afterAll(async () => {
    await context.bus?.close();
    await context.db?.drop();
  });
  return context;
}
