/**
 * What bounds the cost of the public queries: the reads across every subject use indexes by block time, each
 * client has a request budget (point.rateLimit), and a statement running longer than point.queryTimeoutMs is
 * cancelled and answered 503 (on connections of its own, so the consumer's are never held).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../shared/db/pool.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { verdictSeries } from './dashboard-data.js';
import { POINTS_ERRORS } from './errors.js';
import { pointsMigrations } from './migrations.js';
import { windowEndingAt } from './scoring.js';
import { PointsStore } from './store.js';
import { pointTestConfig, startTestPoints } from './test-harness.js';

const NOW = 1_800_000_000;

describe('the reads across every subject', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** The statements a read sends, each with its plan (sequential scans refused, so any usable index shows). */
  async function plansOf(read: (db: Queryable) => Promise<unknown>): Promise<string[]> {
    const statements: Array<{ text: string; values: unknown[] }> = [];
    const recorder: Queryable = {
      query: ((q: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
        const text = typeof q === 'string' ? q : q.text;
        statements.push({ text, values: (typeof q === 'string' ? values : q.values) ?? [] });
        return db.pool.query(text, (typeof q === 'string' ? values : q.values) ?? []);
      }) as Queryable['query'],
    };
    await read(recorder);
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL enable_seqscan = off');
      const plans: string[] = [];
      for (const { text, values } of statements) {
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values);
        plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
      }
      return plans;
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  }

  it("the LP ranking reads only the window's rows, by block time", async () => {
    const [plan] = await plansOf((q) => new PointsStore(q).lpRanking(windowEndingAt(NOW, 90)));
    // The swaps by block time; the LP violations from points_deductions_subject_time, without the heap.
    expect(plan).toMatch(
      /(Index Only Scan using|Index Scan using|Bitmap Index Scan on) points_lp_swaps_time/,
    );
    expect(plan).toMatch(/Index Only Scan using points_deductions_subject_time/);
    expect(plan).not.toMatch(/Seq Scan/);
  });

  it("a subject's deduction records: walked backwards along its index, never sorted, on every page", async () => {
    const subject = '0x' + 'ab'.repeat(20);
    const store = (q: Queryable) => new PointsStore(q);
    const plans = await plansOf(async (q) => {
      await store(q).deductionRecords('user', subject, NOW, 20, null);
      await store(q).deductionRecords('user', subject, NOW, 20, {
        blockTime: NOW - 5,
        bidId: '0x' + '0'.repeat(64),
      });
    });
    expect(plans).toHaveLength(2);
    for (const plan of plans) {
      expect(plan).toMatch(/Index Scan Backward using points_deductions_subject_time/);
      expect(plan).not.toMatch(/Sort|Seq Scan/);
    }
  });

  it("the dashboard's verdicts: newest, first and last by index, the rest only in the window", async () => {
    await db.pool.query(
      `INSERT INTO points_verdicts (bid_id, outcome, block_time, verdict, event_id)
       SELECT 'b' || g, 'normal', $1 + g, '{"case": null}', 'e' || g FROM generate_series(1, 50) g`,
      [NOW],
    );
    const plans = await plansOf((q) => verdictSeries(q, { windowDays: 90, since: NOW + 25 }));
    expect(plans).toHaveLength(3);
    for (const plan of plans) {
      expect(plan).toMatch(/(using|on) points_verdicts_time/);
      expect(plan).not.toMatch(/Seq Scan/);
    }
  });
});

describe('a client over its budget, and a query over its time', () => {
  let db: TestDatabase;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    points = await startTestPoints(
      db,
      pointTestConfig({ rateLimit: { max: 4, windowMs: 60_000 }, queryTimeoutMs: 300 }),
      { nowSeconds: () => NOW, consume: false },
    );
  });
  afterAll(async () => {
    await points?.close();
    await db?.drop();
  });

  it('cancels a statement that runs longer than point.queryTimeoutMs and answers 503 / 32011', async () => {
    // A writer holding the table makes the ranking wait: the wait counts against the statement's time.
    const writer = await db.pool.connect();
    try {
      await writer.query('BEGIN');
      await writer.query('LOCK TABLE points_lp_swaps IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      const response = await fetch(`${points.base}/lp-ranking?at=${NOW}`, {
        signal: AbortSignal.timeout(5_000),
      });
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({
        code: POINTS_ERRORS.QUERY_TIMEOUT.code,
        message: 'the query took too long and was cancelled; retry later',
      });
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      await writer.query('ROLLBACK');
      writer.release();
    }
    // The lock gone, the same query answers (2 of the client's 4 requests used).
    expect((await points.get(`/lp-ranking?at=${NOW}`)).status).toBe(200);
  });

  it('answers 429 / 32012 once a client used point.rateLimit.max requests, but not on /health', async () => {
    expect((await points.get('/lp-point?lp_id=lp-1')).status).toBe(200);
    expect((await points.get('/user-point?address=0x' + '1'.repeat(40))).status).toBe(200);
    const refused = await fetch(`${points.base}/lp-point?lp_id=lp-1`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await refused.json()).toMatchObject({ code: POINTS_ERRORS.RATE_LIMITED.code });
    expect((await points.get('/dashboard/verdicts')).status).toBe(429);
    expect((await fetch(`${points.base}/health`)).status).toBe(200);
  });
});

describe('point.rateLimit behind a reverse proxy (http.trustProxy)', () => {
  let db: TestDatabase;
  beforeAll(async () => void (db = await createTestDatabase([pointsMigrations])));
  afterAll(async () => db?.drop());

  /** Points with a budget of 2 requests, behind `trustProxy`; `asks(client)` answers a request's status. */
  async function behind(trustProxy: string[]) {
    const points = await startTestPoints(db, pointTestConfig({ rateLimit: { max: 2, windowMs: 60_000 } }), {
      nowSeconds: () => NOW,
      consume: false,
      trustProxy,
    });
    const asks = async (client: string) =>
      (await fetch(`${points.base}/lp-point?lp_id=lp-1`, { headers: { 'x-forwarded-for': client } })).status;
    return { points, asks };
  }

  it('each client behind a trusted proxy has its own budget', async () => {
    const { points, asks } = await behind(['127.0.0.1']);
    try {
      expect([await asks('203.0.113.7'), await asks('203.0.113.7'), await asks('203.0.113.7')]).toEqual([
        200, 200, 429,
      ]);
      // Another client through the same proxy is not held up by the first one's requests.
      expect(await asks('198.51.100.9')).toBe(200);
    } finally {
      await points.close();
    }
  });

  it('an IPv6 client has one budget for its /64: a new address of the same /64 is not a new budget', async () => {
    const { points, asks } = await behind(['127.0.0.1']);
    try {
      expect([
        await asks('2001:db8:1:2::1'),
        await asks('2001:db8:1:2:ffff::2'),
        await asks('2001:0db8:0001:0002:abcd:1:2:3'),
      ]).toEqual([200, 200, 429]);
      // Another /64 has its own.
      expect(await asks('2001:db8:1:3::1')).toBe(200);
    } finally {
      await points.close();
    }
  });

  it('a client that is not a trusted proxy cannot name another address to escape its budget', async () => {
    const { points, asks } = await behind(['10.9.9.9']);
    try {
      expect([await asks('203.0.113.1'), await asks('203.0.113.2'), await asks('203.0.113.3')]).toEqual([
        200, 200, 429,
      ]);
    } finally {
      await points.close();
    }
  });
});
