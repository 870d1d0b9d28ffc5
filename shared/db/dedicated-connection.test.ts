/**
 * Dedicated connections dropped silently (a NAT or firewall that forgot them: test/support/tcp-proxy.ts freeze()):
 * a query on one waited for ever, and the server kept its session and advisory locks. The shared helpers
 * (dedicated-connection.ts) and the session lock built on them, against a real server behind a proxy.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { tcpProxy, throughProxy } from '../../test/support/tcp-proxy.js';
import {
  ConnectionLostError,
  endLostSession,
  endWithin,
  queryWithin,
  sessionOf,
} from './dedicated-connection.js';
import { createPool } from './pool.js';
import { SessionLock } from './session-lock.js';

/** Resolves false when `promise` has not settled within `ms`. */
const within = (promise: Promise<unknown>, ms: number) =>
  Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms)),
  ]);

/** Whether the server still has the session `pid`. */
const alive = async (db: TestDatabase, pid: number) =>
  (await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1`, [pid])).rowCount === 1;

describe('a dedicated connection dropped silently', () => {
  let db: TestDatabase;
  let proxy: Awaited<ReturnType<typeof tcpProxy>>;
  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = await tcpProxy(new URL(db.url));
  }, 60_000);
  afterAll(async () => {
    proxy?.close();
    await db?.drop();
  });

  /** A client through a proxy of its own (freezing it leaves the other tests' connections alone). */
  const frozenClient = async () => {
    const own = await tcpProxy(new URL(db.url));
    const client = new pg.Client({ connectionString: throughProxy(db.url, own) });
    const events: string[] = [];
    client.on('error', () => events.push('error'));
    client.on('end', () => events.push('end'));
    await client.connect();
    const session = await sessionOf(client);
    await client.query(`SELECT pg_advisory_lock(42)`);
    own.freeze();
    return { client, session, events, close: () => own.close() };
  };

  it('fails a query after its deadline, ends the connection, and its session is ended from another', async () => {
    const { client, session, events, close } = await frozenClient();
    try {
      const started = performance.now();
      const late: string[] = [];
      await expect(queryWithin(client, 300, 'SELECT 1', undefined, (r) => late.push(r))).rejects.toThrow(
        ConnectionLostError,
      );
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(late).toEqual(['no answer from the database within 300 ms']);
      await expect.poll(() => events).toContain('end');
      // The server never heard of it: the session and its lock are still there until ended.
      expect(await alive(db, session.pid)).toBe(true);
      const other = await db.pool.connect();
      try {
        expect((await other.query(`SELECT pg_try_advisory_lock(42) AS got`)).rows[0].got).toBe(false);
        expect(await endLostSession(other, session)).toBe(true);
        await expect.poll(() => alive(db, session.pid)).toBe(false);
        expect((await other.query(`SELECT pg_try_advisory_lock(42) AS got`)).rows[0].got).toBe(true);
        await other.query(`SELECT pg_advisory_unlock_all()`);
        // Once ended, nothing is left to end (and a reused pid of another start is never taken for it).
        expect(await endLostSession(other, session)).toBe(false);
      } finally {
        other.release();
      }
    } finally {
      close();
    }
  });

  it('is ended by endWithin without waiting for a goodbye that never comes', async () => {
    const { client, session, close } = await frozenClient();
    try {
      expect(await within(endWithin(client, 300), 2_000)).toBe(true);
    } finally {
      await endLostSession(db.pool, session);
      close();
    }
  });

  it('fails a session lock holder’s next ask in time, and is taken again at once on a new connection', async () => {
    const through = createPool(throughProxy(db.url, proxy), { max: 1 });
    const lock = new SessionLock(through, 'otmoic:test:dropped', 300);
    const standby = new SessionLock(db.pool, 'otmoic:test:dropped');
    try {
      expect(await lock.hold()).toBe(true);
      expect(await standby.hold()).toBe(false);
      // Of this test's database: the server's other databases (the files run beside this one) have session
      // locks of their own.
      const [holder, ...others] = (
        await db.pool.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE application_name = 'otmoic-lock'
             AND datname = current_database() AND pid IN
             (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)`,
        )
      ).rows;
      expect(others).toEqual([]);
      expect(holder).toBeDefined();
      proxy.freeze();
      // Before: the ask waited for ever (the holder stuck, its lock held by a session nobody used).
      await expect(lock.hold()).rejects.toThrow(ConnectionLostError);
      // The next ask opens a new connection, ends the lost session on the server, and holds the lock again.
      expect(await lock.hold()).toBe(true);
      expect(await alive(db, holder!.pid)).toBe(false);
      expect(await standby.hold()).toBe(false);
    } finally {
      await lock.release();
      await standby.release();
      await through.end();
    }
  });
});
