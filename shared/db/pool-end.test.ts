/**
 * A pool's end is its connections' end: pg's Pool.end resolves once it has asked its idle clients to end, not
 * once they have. The runner stops the embedded PostgreSQL right after it; a session still there was then
 * ended by the server's shutdown, and its client's error logged as a warning at a clean stop.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { createLogger } from '../logging/logger.js';
import { createPool } from './pool.js';

describe('createPool: end', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('resolves once every session of the pool is gone from the server', async () => {
    const application = `pool-end-${randomBytes(3).toString('hex')}`;
    const sessions = async () =>
      (
        await db.pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
          [application],
        )
      ).rows[0]!.n;
    for (let round = 0; round < 5; round++) {
      const pool = createPool(db.url, { max: 4, application, log: createLogger({ level: 'silent' }) });
      await Promise.all([1, 2, 3, 4].map(() => pool.query('SELECT pg_sleep(0.05)')));
      expect(await sessions()).toBe(4);
      await pool.end();
      expect(await sessions()).toBe(0);
    }
  });
});
