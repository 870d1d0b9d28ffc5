/**
 * The score cache answers from memory only while it hears about every change: a change committed by any
 * process reaches it through NOTIFY; with its LISTEN connection gone it answers from the database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { withTransaction } from '../../shared/db/pool.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { tcpProxy, throughProxy } from '../../test/support/tcp-proxy.js';
import { waitFor } from '../../test/support/wait.js';
import { FactsCache, listenForChanges } from './facts-cache.js';
import { pointsMigrations } from './migrations.js';
import { violationEffects, verdictEffects } from './projection.js';
import { windowEndingAt } from './scoring.js';
import { PointsStore } from './store.js';
import { hex32, userAddress, verdictPayload, violationPayload } from './test-harness.js';

const NOW = 1_800_000_000;
const WINDOW = windowEndingAt(NOW, 90);
const USER = userAddress(0xfeed);

describe('score cache', () => {
  let db: TestDatabase;
  let store: PointsStore;
  let cache: FactsCache;
  let listener: { stop(): Promise<void> };

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    store = new PointsStore(db.pool);
    cache = new FactsCache(store);
    listener = listenForChanges({ dbUrl: db.url, cache, log: createLogger({ level: 'silent' }) });
    await waitFor(() => cache.enabled, 'the cache to listen');
  });
  afterAll(async () => {
    await listener?.stop();
    await db?.drop();
  });

  const insertQuietly = (bid: number) =>
    db.pool.query(
      `INSERT INTO points_deductions (bid_id, party, subject, arbitration_case, src_chain_id, chain_id, block_time, rule, tenths, transactions, event_id)
       VALUES ($1, 'user', $2, 5, '9006', '9006', $3, 'r', 1, '[]', $1)`,
      [hex32(bid), USER, NOW - 5],
    );

  it('keeps answering from memory, and forgets a subject when another process commits a change to it', async () => {
    expect(await cache.violationsInWindow('user', USER, WINDOW)).toBe(0);
    // A row written without a notification is not seen: the answer really comes from the cache.
    await insertQuietly(1);
    expect(await cache.violationsInWindow('user', USER, WINDOW)).toBe(0);
    expect(await store.violationsInWindow('user', USER, WINDOW)).toBe(1);
    // The projection's own write notifies at commit.
    await withTransaction(db.pool, (tx) =>
      store.apply(
        tx,
        violationEffects(
          'v2',
          violationPayload({ bid: hex32(2), party: 'user', subject: USER, blockTime: NOW - 1 }),
        ),
      ),
    );
    await waitFor(
      async () => (await cache.violationsInWindow('user', USER, WINDOW)) === 2,
      'the change to reach the cache',
    );
  });

  it('is emptied by a change to a key no notification can carry (over 8,000 bytes, or holding a newline), which still commits', async () => {
    const other = userAddress(0xbeef);
    const inWindow = () => store.violationsInWindow('user', other, WINDOW);
    for (const [i, lp] of ['lp-' + 'x'.repeat(8_000), 'LP\nNord'].entries()) {
      expect(await cache.violationsInWindow('user', other, WINDOW)).toBe(await inWindow());
      // Cached now: a row written without a notification is not seen until the cache is emptied.
      await db.pool.query(
        `INSERT INTO points_deductions (bid_id, party, subject, arbitration_case, src_chain_id, chain_id, block_time, rule, tenths, transactions, event_id)
         VALUES ($1, 'user', $2, 5, '9006', '9006', $3, 'r', 1, '[]', $1)`,
        [hex32(100 + i), other, NOW - 5],
      );
      const quiet = await inWindow();
      expect(await cache.violationsInWindow('user', other, WINDOW)).toBe(quiet - 1);
      await withTransaction(db.pool, (tx) =>
        store.apply(
          tx,
          violationEffects(
            `lp-${i}`,
            violationPayload({ bid: hex32(200 + i), party: 'lp', subject: lp, blockTime: NOW - 1 }),
          ),
        ),
      );
      const { rows } = await db.pool.query(
        'SELECT count(*)::int AS n FROM points_deductions WHERE subject = $1',
        [lp],
      );
      expect(rows[0].n).toBe(1);
      await waitFor(
        async () => (await cache.violationsInWindow('user', other, WINDOW)) === quiet,
        'the cache to be emptied',
      );
    }
  });

  it('computes LP figures for any window from prefix sums, as SQL does', async () => {
    for (const [i, [offset, outcome, seconds]] of (
      [
        [-10, 'normal', 30],
        [-20, 'normal', 50],
        [-30, 'violation', null],
        [-90 * 86_400, 'normal', 70],
      ] as const
    ).entries()) {
      const verdict = verdictPayload({
        bid: hex32(100 + i),
        lpId: 'lp-x',
        outcome,
        party: outcome === 'violation' ? 'lp' : null,
        blockTime: NOW + offset,
        responseTimeSeconds: seconds,
      });
      await withTransaction(db.pool, (tx) => store.apply(tx, verdictEffects(`e${i}`, verdict)));
    }
    for (const at of [
      NOW,
      NOW - 10,
      NOW - 11,
      NOW - 30,
      NOW + 1,
      NOW - 90 * 86_400,
      NOW + 90 * 86_400 - 11,
    ]) {
      const window = windowEndingAt(at, 90);
      expect(await cache.lpFigures('lp-x', window)).toEqual(await store.lpFigures('lp-x', window));
    }
    expect(await cache.lpFigures('lp-x', WINDOW)).toMatchObject({
      decidedSwaps: 3,
      normalSwaps: 2,
      responseSecondsSum: 80,
    });
  });

  it('answers from the database while its LISTEN connection is gone, and caches again once back', async () => {
    await db.pool.query(
      // Of this test's database only: the files run beside it have Points listeners of their own.
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = 'otmoic-points-listen' AND datname = current_database()`,
    );
    await waitFor(() => !cache.enabled, 'the cache to notice the lost connection');
    await insertQuietly(3);
    expect(await cache.violationsInWindow('user', USER, WINDOW)).toBe(3);
    await waitFor(() => cache.enabled, 'the listener to reconnect', 10_000);
    expect(await cache.violationsInWindow('user', USER, WINDOW)).toBe(3);
  });
});

describe('a LISTEN connection dropped silently (a NAT or firewall forgot it: no error, no end)', () => {
  let db: TestDatabase;
  let proxy: Awaited<ReturnType<typeof tcpProxy>>;
  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    proxy = await tcpProxy(new URL(db.url));
  });
  afterAll(async () => {
    proxy?.close();
    await db?.drop();
  });
  const listen = (cache: FactsCache) =>
    listenForChanges({
      dbUrl: throughProxy(db.url, proxy),
      cache,
      log: createLogger({ level: 'silent' }),
      heartbeatMs: 200,
      heartbeatTimeoutMs: 500,
    });
  /** Resolves false when `promise` has not settled within `ms`. */
  const within = (promise: Promise<unknown>, ms: number) =>
    Promise.race([promise.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

  it('is noticed by its heartbeat: the cache stops answering from what it no longer hears', async () => {
    const store = new PointsStore(db.pool);
    const cache = new FactsCache(store);
    const listener = listen(cache);
    try {
      await waitFor(() => cache.enabled, 'the cache to listen');
      expect(await cache.violationsInWindow('user', USER, WINDOW)).toBe(0);
      proxy.freeze();
      // Committed with its notification, which never reaches the frozen connection.
      await withTransaction(db.pool, (tx) =>
        store.apply(
          tx,
          violationEffects(
            'v1',
            violationPayload({ bid: hex32(1), party: 'user', subject: USER, blockTime: NOW - 1 }),
          ),
        ),
      );
      await waitFor(
        async () => (await cache.violationsInWindow('user', USER, WINDOW)) === 1,
        'the cache to stop answering a score it can no longer hear changes of',
        5_000,
      );
    } finally {
      await within(listener.stop(), 2_000);
    }
  });

  it('does not hold up a stop', async () => {
    const cache = new FactsCache(new PointsStore(db.pool));
    const listener = listen(cache);
    await waitFor(() => cache.enabled, 'the cache to listen');
    proxy.freeze();
    expect(await within(listener.stop(), 2_000), 'stop() returned within 2 s').toBe(true);
  });
});

describe('a subject with more facts than the cache keeps', () => {
  it('is answered by SQL without reloading its facts on every query, nor after its changes', async () => {
    const calls = { swapFacts: 0, deductionTimes: 0, lpSql: 0, violationsSql: 0 };
    const LIMIT = 10;
    const fake = {
      lpSwapFacts: async (_lpId: string, limit: number) => {
        calls.swapFacts++;
        return Array.from({ length: limit }, (_, i) => ({
          blockTime: NOW - i,
          normal: true,
          responseTimeSeconds: 10,
        }));
      },
      deductionTimes: async (_party: string, _subject: string, limit: number) => {
        calls.deductionTimes++;
        return Array.from({ length: limit }, (_, i) => NOW - i);
      },
      lpFigures: async () => {
        calls.lpSql++;
        return {
          violations: 11,
          decidedSwaps: 11,
          normalSwaps: 11,
          responseSecondsSum: 110,
          responseCount: 11,
        };
      },
      violationsInWindow: async () => {
        calls.violationsSql++;
        return 11;
      },
    } as unknown as PointsStore;
    const cache = new FactsCache(fake, { maxFactsPerSubject: LIMIT });
    cache.setListening(true);

    for (let i = 0; i < 3; i++) {
      expect((await cache.lpFigures('big-lp', WINDOW)).decidedSwaps).toBe(11);
      expect(await cache.violationsInWindow('user', USER, WINDOW)).toBe(11);
    }
    // Each subject's facts loaded once (the LP's violations and swaps, the user's violations); SQL every time
    // (the LP's violations too, inside lpFigures).
    expect(calls).toEqual({ swapFacts: 1, deductionTimes: 2, lpSql: 3, violationsSql: 6 });

    // A change to the LP is heard: facts are only ever added, so it is still over the limit. Its facts are not
    // counted again (they were, limit + 1 rows, after each change of a busy LP).
    cache.invalidateSubject('lp:big-lp');
    await cache.lpFigures('big-lp', WINDOW);
    await cache.lpFigures('big-lp', WINDOW);
    expect(calls).toMatchObject({ swapFacts: 1, deductionTimes: 2, lpSql: 5 });
    // Only losing the connection (every entry forgotten) counts them again, once.
    cache.setListening(false);
    cache.setListening(true);
    await cache.lpFigures('big-lp', WINDOW);
    expect(calls).toMatchObject({ swapFacts: 2, deductionTimes: 3, lpSql: 6 });
  });

  it('shares one load among requests that miss together, and not one that started before a change', async () => {
    let loads = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const fake = {
      deductionTimes: async () => {
        loads++;
        await gate;
        return [NOW - 1];
      },
    } as unknown as PointsStore;
    const cache = new FactsCache(fake);
    cache.setListening(true);
    const together = [1, 2, 3].map(() => cache.violationsInWindow('user', USER, WINDOW));
    expect(loads).toBe(1);
    // A change heard while it loads: the next request does not take the load that may predate it.
    cache.invalidateSubject(`user:${USER}`);
    const after = cache.violationsInWindow('user', USER, WINDOW);
    expect(loads).toBe(2);
    release();
    expect(await Promise.all([...together, after])).toEqual([1, 1, 1, 1]);
  });

  it('keeps a load while only other subjects change: a busy LP is loaded once under steady traffic', async () => {
    let loads = 0;
    let cache!: FactsCache;
    const fake = {
      deductionTimes: async () => [],
      lpSwapFacts: async () => {
        loads++;
        // Meanwhile the consumer commits a verdict of another LP, a violation of some user.
        cache.invalidateSubject(`lp:someone-else-${loads}`);
        cache.invalidateSubject(`user:${USER}`);
        return [{ blockTime: NOW - 1, normal: true, responseTimeSeconds: 30 }];
      },
    } as unknown as PointsStore;
    cache = new FactsCache(fake);
    cache.setListening(true);
    for (let i = 0; i < 5; i++) expect((await cache.lpFigures('big-lp', WINDOW)).decidedSwaps).toBe(1);
    expect(loads).toBe(1);
    // Its own change is heard: loaded again, once.
    cache.invalidateSubject('lp:big-lp');
    for (let i = 0; i < 3; i++) await cache.lpFigures('big-lp', WINDOW);
    expect(loads).toBe(2);
  });

  it('evicts the least recently used subject, not the first loaded', async () => {
    const loaded: string[] = [];
    const fake = {
      deductionTimes: async (_party: string, subject: string) => {
        loaded.push(subject);
        return [];
      },
    } as unknown as PointsStore;
    const cache = new FactsCache(fake, { maxEntries: 2 });
    cache.setListening(true);
    const ask = (subject: string) => cache.violationsInWindow('user', subject, WINDOW);
    await ask('a');
    await ask('b');
    await ask('a'); // a is used again: b is now the least recent
    await ask('c'); // evicts b
    await ask('a');
    expect(loaded).toEqual(['a', 'b', 'c']);
    await ask('b');
    expect(loaded).toEqual(['a', 'b', 'c', 'b']);
  });
});
