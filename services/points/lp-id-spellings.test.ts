/**
 * One LP, two spellings: the Classifier takes an LP's consent under `acme@lp` and `acme.lp` alike (didNameIs:
 * the SDK writes a DID name `a@b` as the domain `a.b`), so an LP can sign agreements under either id. Points keys
 * an LP by the domain form: its violations under one spelling count when it is asked for under the other, and
 * the ranking lists it once. Migrations 3 and 4 move the rows written before to that form (4: every `@`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../shared/db/migrate.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { pointsMigrations } from './migrations.js';
import {
  hex32,
  pointTestConfig,
  publishVerdict,
  publishViolation,
  startTestPoints,
  verdictPayload,
  violationPayload,
} from './test-harness.js';

const NOW = 1_800_000_000;

describe('an LP id written a@b and a.b is one LP', () => {
  let db: TestDatabase;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  const count = async (sql: string) => Number((await db.pool.query(sql)).rows[0].n);

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    points = await startTestPoints(db, pointTestConfig(), { nowSeconds: () => NOW });
    // Its broken swaps under one spelling, its clean swaps under the other.
    for (const i of [0, 1, 2]) {
      await publishVerdict(
        points.bus,
        verdictPayload({
          bid: hex32(300 + i),
          lpId: 'acme@lp',
          outcome: 'violation',
          party: 'lp',
          case: 3,
          blockTime: NOW - 100 - i,
        }),
      );
      await publishViolation(
        points.bus,
        violationPayload({ bid: hex32(300 + i), party: 'lp', subject: 'acme@lp', blockTime: NOW - 100 - i }),
      );
      await publishVerdict(
        points.bus,
        verdictPayload({ bid: hex32(310 + i), lpId: 'acme.lp', outcome: 'normal', blockTime: NOW - 50 - i }),
      );
    }
    await waitFor(
      async () =>
        (await count('SELECT count(*) n FROM points_lp_swaps')) === 6 &&
        (await count('SELECT count(*) n FROM points_deductions')) === 3,
      'the swaps and deductions',
    );
  }, 60_000);
  afterAll(async () => {
    await points?.close();
    await db?.drop();
  });

  it('its violations count under the spelling it quotes with, and under the other', async () => {
    for (const spelling of ['acme.lp', 'acme@lp']) {
      const answer = await points.get(`/lp-point?lp_id=${encodeURIComponent(spelling)}&at=${NOW}`);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({
        subject: { kind: 'lp', lp_id: 'acme.lp' },
        deductions: { violations: 3 },
        statistics: { decided_swaps: 6, normal_swaps: 3 },
      });
      const records = await points.get(
        `/lp-deduction-records?lp_id=${encodeURIComponent(spelling)}&at=${NOW}`,
      );
      expect(records.body.records).toHaveLength(3);
    }
  });

  it('the ranking lists it once, in the domain form', async () => {
    const ranking = await points.get(`/lp-ranking?at=${NOW}`);
    expect(ranking.status).toBe(200);
    const acme = (ranking.body.lps as { lp_id: string }[]).filter((r) => r.lp_id.startsWith('acme'));
    expect(acme.map((r) => r.lp_id)).toEqual(['acme.lp']);
  });
});

describe('an LP id with more than one @ (a DID name may hold several)', () => {
  // The Classifier takes consent for `acme@lp@x` under that name and under its domain form `acme.lp@x`
  // (didNameIs reads the first `@` as `.`). Points read only the first `@` too: the LP was two rows of the
  // ranking, and the id the ranking listed (`acme.lp@x`) was looked up as `acme.lp.x`, another LP's key.
  let db: TestDatabase;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  const count = async (sql: string) => Number((await db.pool.query(sql)).rows[0].n);

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    points = await startTestPoints(db, pointTestConfig(), { nowSeconds: () => NOW });
    await publishVerdict(
      points.bus,
      verdictPayload({
        bid: hex32(400),
        lpId: 'acme@lp@x',
        outcome: 'violation',
        party: 'lp',
        case: 3,
        blockTime: NOW - 100,
      }),
    );
    await publishViolation(
      points.bus,
      violationPayload({ bid: hex32(400), party: 'lp', subject: 'acme@lp@x', blockTime: NOW - 100 }),
    );
    await publishVerdict(
      points.bus,
      verdictPayload({ bid: hex32(401), lpId: 'acme.lp@x', outcome: 'normal', blockTime: NOW - 50 }),
    );
    await waitFor(
      async () =>
        (await count('SELECT count(*) n FROM points_lp_swaps')) === 2 &&
        (await count('SELECT count(*) n FROM points_deductions')) === 1,
      'the swaps and the deduction',
    );
  }, 60_000);
  afterAll(async () => {
    await points?.close();
    await db?.drop();
  });

  it('is one LP, found under the id the ranking lists and under either spelling', async () => {
    const ranking = await points.get(`/lp-ranking?at=${NOW}`);
    const ids = (ranking.body.lps as { lp_id: string }[]).map((r) => r.lp_id);
    expect(ids, 'the ranking lists the LP once').toHaveLength(1);
    for (const lpId of [ids[0]!, 'acme@lp@x', 'acme.lp@x']) {
      const answer = await points.get(`/lp-point?lp_id=${encodeURIComponent(lpId)}&at=${NOW}`);
      expect(answer.body, lpId).toMatchObject({
        subject: { lp_id: ids[0] },
        deductions: { violations: 1 },
        statistics: { decided_swaps: 2, normal_swaps: 1 },
      });
      const records = await points.get(`/lp-deduction-records?lp_id=${encodeURIComponent(lpId)}`);
      expect(records.body.records, lpId).toHaveLength(1);
    }
    const history = await points.get(`/dashboard/score-history?lp_id=${encodeURIComponent(ids[0]!)}`);
    expect(history.body.subject).toEqual({ kind: 'lp', id: ids[0] });
    expect(history.body.points).toHaveLength(1);
  });
});

describe('points migrations 3 and 4: the rows written before them', () => {
  it('moves LP ids to their key, every @ read as . (not users, not shortened ids), and bounds response times', async () => {
    const before = { ...pointsMigrations, migrations: pointsMigrations.migrations.slice(0, 2) };
    const db = await createTestDatabase([before]);
    try {
      const shortened = `${'x@'.repeat(450)}…#sha256:${'ab'.repeat(32)}`;
      await db.pool.query(
        `INSERT INTO points_deductions (bid_id, party, subject, arbitration_case, src_chain_id, chain_id,
           block_time, rule, tenths, transactions, event_id)
         VALUES ('d1', 'lp', 'acme@lp@x', 3, '1', '1', 10, 'r', 10, '[]', 'e1'),
                ('d2', 'user', 'user@odd', 5, '1', '1', 10, 'r', 10, '[]', 'e2'),
                ('d3', 'lp', $1, 3, '1', '1', 10, 'r', 10, '[]', 'e3')`,
        [shortened],
      );
      await db.pool.query(
        `INSERT INTO points_lp_swaps (bid_id, lp_id, block_time, normal, response_time_seconds)
         VALUES ('s1', 'acme@lp', 10, true, 9007199254740991), ('s2', 'plain', 10, true, 30)`,
      );
      await migrate(db.pool, [pointsMigrations]);
      const deductions = await db.pool.query('SELECT bid_id, subject FROM points_deductions ORDER BY bid_id');
      expect(deductions.rows).toEqual([
        { bid_id: 'd1', subject: 'acme.lp.x' },
        { bid_id: 'd2', subject: 'user@odd' },
        { bid_id: 'd3', subject: shortened },
      ]);
      const swaps = await db.pool.query(
        'SELECT bid_id, lp_id, response_time_seconds::text AS r FROM points_lp_swaps ORDER BY bid_id',
      );
      expect(swaps.rows).toEqual([
        { bid_id: 's1', lp_id: 'acme.lp', r: '4294967296' },
        { bid_id: 's2', lp_id: 'plain', r: '30' },
      ]);
    } finally {
      await db.drop();
    }
  });
});
