import { createLogger } from '../../shared/logging/logger.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { createTestDatabase } from '../support/database.js';
import { busConformanceSuite } from './bus.js';

busConformanceSuite('postgres log', async (observer) => {
  const db = await createTestDatabase();
  const bus = new PostgresBus({
    pool: db.pool,
    connectionString: db.url,
    log: createLogger({ level: (process.env.BUS_TEST_LOG as 'warn') ?? 'silent' }),
    rebalanceMs: 200,
    observer,
  });
  return {
    bus,
    pool: db.pool,
    omitsValues: true,
    async cleanup() {
      await bus.close();
      await db.drop();
    },
  };
});
