/**
 * Pooled connections dropped silently (test/support/tcp-proxy.ts freeze()): a statement on one waited until TCP
 * gave up (about 15 minutes), and its session kept the transaction's locks. The pool watch (pool-watch.ts),
 * against a real server behind a proxy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { tcpProxy, throughProxy } from '../../test/support/tcp-proxy.js';
import { createLogger } from '../logging/logger.js';
import { createMetrics } from '../runtime/metrics.js';
import { createPool, lostConnections } from './pool.js';

const EVERY_MS = 150;

describe('the pool watch', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  /** A pool through a proxy of its own, watched every EVERY_MS. */
  const proxiedPool = async () => {
    const proxy = await tcpProxy(new URL(db.url));
    const pool = createPool(throughProxy(db.url, proxy), {
      max: 2,
      watchEveryMs: EVERY_MS,
      watchProbeTimeoutMs: 300,
    });
    pool.on('connect', (client) => client.on('error', () => undefined));
    return {
      pool,
      proxy,
      close: async () => {
        await pool.end().catch(() => undefined);
        proxy.close();
      },
    };
  };

  it('fails a statement whose connection was dropped, and ends its session so that its locks are freed', async () => {
    const { pool, proxy, close } = await proxiedPool();
    try {
      const client = await pool.connect();
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(7)');
      proxy.freeze();
      const started = performance.now();
      let failure: unknown;
      try {
        await client.query('SELECT 1');
      } catch (err) {
        failure = err;
      } finally {
        client.release(true);
      }
      expect(failure).toBeInstanceOf(Error);
      // Two looks after the statement is overdue: well under a second here, 20–30 s with the defaults.
      expect(performance.now() - started).toBeLessThan(10 * EVERY_MS + 2_000);
      expect(lostConnections(pool)).toBe(1);
      const { registry } = createMetrics(
        () => undefined,
        createLogger({ level: 'silent' }),
        () => pool,
      );
      expect(await registry.getSingleMetricAsString('db_connections_lost_total')).toMatch(
        /^db_connections_lost_total 1$/m,
      );
      // The session that held the lock is gone: another connection takes it at once.
      const taken = await db.pool.query<{ got: boolean }>(`SELECT pg_try_advisory_lock(7) AS got`);
      expect(taken.rows[0]!.got).toBe(true);
      await db.pool.query(`SELECT pg_advisory_unlock_all()`);
      // The pool goes on with a new connection (the proxy passes new ones).
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    } finally {
      await close();
    }
  });

  it('leaves a long statement alone: its session is running it', async () => {
    const { pool, close } = await proxiedPool();
    try {
      // Many looks (more than ten) while it runs; pool.query passes a callback to the client.
      const { rows } = await pool.query<{ done: boolean }>(`SELECT pg_sleep(2) IS NOT NULL AS done`);
      expect(rows[0]!.done).toBe(true);
      expect(lostConnections(pool)).toBe(0);
    } finally {
      await close();
    }
  });

  it('fails a statement when the server cannot be reached at all', async () => {
    const { pool, proxy, close } = await proxiedPool();
    try {
      await pool.query('SELECT 1');
      // The open connection and every new one (the watch's looks included) black-holed: the database host
      // is unreachable.
      proxy.freeze();
      proxy.blackHoleNew();
      const started = performance.now();
      await expect(pool.query('SELECT 1')).rejects.toThrow();
      expect(performance.now() - started).toBeLessThan(10 * EVERY_MS + 3_000);
      expect(lostConnections(pool)).toBe(1);
    } finally {
      await close();
    }
  });
});
