/**
 * GET /dashboard/verdicts reads only the look-back window (point.windowDays) ending at the newest verdict's
 * block time, with or without since=: its cost must not grow with the whole verdict history.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../shared/db/pool.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { verdictSeries } from './dashboard-data.js';
import { pointsMigrations } from './migrations.js';
import { SECONDS_PER_DAY } from './scoring.js';
import { pointTestConfig, startTestPoints } from './test-harness.js';

const NEWEST = 1_800_000_000;
const WINDOW_DAYS = 30;
const WINDOW = WINDOW_DAYS * SECONDS_PER_DAY;

describe('the dashboard verdicts within the look-back window', () => {
  let db: TestDatabase;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    // 1,000 verdicts older than the window (the oldest exactly windowDays old: out, as in windowEndingAt),
    // and 10 inside it ending at NEWEST.
    await db.pool.query(
      `INSERT INTO points_verdicts (bid_id, outcome, block_time, verdict, event_id)
       SELECT 'old' || g, 'normal', $1 - g * 3600, '{"case": null}', 'eo' || g FROM generate_series(0, 999) g`,
      [NEWEST - WINDOW],
    );
    await db.pool.query(
      `INSERT INTO points_verdicts (bid_id, outcome, block_time, verdict, event_id)
       SELECT 'new' || g, 'violation', $1 - g * 60, '{"case": 3}', 'en' || g FROM generate_series(0, 9) g`,
      [NEWEST],
    );
    points = await startTestPoints(db, pointTestConfig({ windowDays: WINDOW_DAYS }), { consume: false });
  });
  afterAll(async () => {
    await points?.close();
    await db?.drop();
  });

  it('without since counts only the window ending at the newest block time', async () => {
    const { status, body } = await points.get('/dashboard/verdicts');
    expect(status).toBe(200);
    expect(body.total).toBe(10);
    expect(Object.keys(body.series)).toEqual(['case 3']);
    expect(body.buckets[0]).toBeGreaterThan(NEWEST - WINDOW - body.bucket_seconds);
  });

  it('clamps an older since to the window, and keeps a later one', async () => {
    expect((await points.get('/dashboard/verdicts?since=0')).body.total).toBe(10);
    expect((await points.get(`/dashboard/verdicts?since=${NEWEST - WINDOW - 1}`)).body.total).toBe(10);
    // After NEWEST − 300: the verdicts at NEWEST, −60 … −240.
    expect((await points.get(`/dashboard/verdicts?since=${NEWEST - 300}`)).body.total).toBe(5);
    expect((await points.get(`/dashboard/verdicts?since=${NEWEST}`)).body).toMatchObject({
      total: 0,
      buckets: [],
    });
  });
});

describe('the dashboard verdicts under a concurrent write', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    await db.pool.query(
      `INSERT INTO points_verdicts (bid_id, outcome, block_time, verdict, event_id)
       SELECT 'v' || g, 'normal', $1 - g * 3600, '{"case": null}', 'e' || g FROM generate_series(0, 9) g`,
      [NEWEST],
    );
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('series add up to the total when a verdict older than the first is stored between its statements', async () => {
    // Verdicts are not stored in block-time order (each swap is decided on its own chain's clock): one older
    // than the window's first verdict may commit after the bounds were read, before the counts.
    let statements = 0;
    const racing = {
      query: (async (...args: unknown[]) => {
        const result = await (db.pool.query as (...a: unknown[]) => Promise<unknown>)(...args);
        if (++statements === 2)
          await db.pool.query(
            `INSERT INTO points_verdicts (bid_id, outcome, block_time, verdict, event_id)
             VALUES ('late', 'violation', $1, '{"case": 5}', 'late')`,
            [NEWEST - 10 * SECONDS_PER_DAY],
          );
        return result;
      }) as Queryable['query'],
    } as Queryable;
    const series = await verdictSeries(racing, { windowDays: WINDOW_DAYS });
    const summed = Object.values(series.series)
      .flat()
      .reduce((a, b) => a + (b ?? 0), 0);
    expect(statements).toBe(3);
    expect(series.total).toBe(10);
    expect(summed).toBe(series.total);
  });
});

describe('the dashboard verdict buckets', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('are at most 24, also when the first verdict is not on a bucket boundary', async () => {
    // Spans from 2 to 48 hours, each starting one second past a multiple of the minute: the first bucket starts
    // before the first verdict, and with a width of span / 24 a 25th bucket was needed for the last one.
    for (const hours of [2, 12, 24, 48]) {
      await db.pool.query('DELETE FROM points_verdicts');
      const lo = NEWEST - hours * 3600 + 1;
      await db.pool.query(
        `INSERT INTO points_verdicts (bid_id, outcome, block_time, verdict, event_id)
         VALUES ('a', 'normal', $1, '{}', 'a'), ('b', 'normal', $2, '{}', 'b')`,
        [lo, NEWEST],
      );
      const series = await verdictSeries(db.pool, { windowDays: WINDOW_DAYS });
      expect(series.buckets.length).toBeLessThanOrEqual(24);
      expect(series.buckets[0]).toBeLessThanOrEqual(lo);
      expect(series.buckets.at(-1)! + series.bucket_seconds).toBeGreaterThan(NEWEST);
      expect(
        Object.values(series.series)
          .flat()
          .reduce((a, b) => a + b, 0),
      ).toBe(2);
    }
  });
});
