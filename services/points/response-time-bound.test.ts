/**
 * The topic takes any safe integer as a swap's response time, and an LP's figures are sums of them: one LP whose
 * response times add up past 2^53 (a chain client's broken timestamps) made every /lp-ranking answer 500, and
 * /lp-point disagree with it (the score cache rounds). Each counted response time is bounded (2^32 s).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { pointsMigrations } from './migrations.js';
import { MAX_COUNTED_RESPONSE_SECONDS } from './projection.js';
import { hex32, pointTestConfig, publishVerdict, startTestPoints, verdictPayload } from './test-harness.js';

const NOW = 1_800_000_000;

describe('an absurd response time', () => {
  let db: TestDatabase;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  const count = async (sql: string) => Number((await db.pool.query(sql)).rows[0].n);

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    points = await startTestPoints(db, pointTestConfig(), { nowSeconds: () => NOW });
  }, 60_000);
  afterAll(async () => {
    await points?.close();
    await db?.drop();
  });

  it('does not take the ranking down, and both routes count it at the bound', async () => {
    await publishVerdict(
      points.bus,
      verdictPayload({ bid: hex32(100), lpId: 'honest-lp', outcome: 'normal', blockTime: NOW - 10 }),
    );
    for (const [i, r] of [Number.MAX_SAFE_INTEGER, 2].entries())
      await publishVerdict(
        points.bus,
        verdictPayload({
          bid: hex32(101 + i),
          lpId: 'odd-lp',
          outcome: 'normal',
          blockTime: NOW - 20,
          responseTimeSeconds: r,
        }),
      );
    await waitFor(async () => (await count('SELECT count(*) n FROM points_lp_swaps')) === 3, 'the swaps');
    const ranking = await points.get(`/lp-ranking?at=${NOW}`);
    expect(ranking.status).toBe(200);
    expect((ranking.body.lps as { lp_id: string }[]).map((l) => l.lp_id).sort()).toEqual([
      'honest-lp',
      'odd-lp',
    ]);
    const odd = await points.get(`/lp-point?lp_id=odd-lp&at=${NOW}`);
    expect(odd.status).toBe(200);
    expect(odd.body.statistics.response_time_sum_seconds).toBe(MAX_COUNTED_RESPONSE_SECONDS + 2);
  });
});
