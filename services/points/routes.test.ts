import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { startRelayAdminStandIn, type RelayAdminStandIn } from '../stand-ins/relay-admin/server.js';
import { POINTS_ERRORS } from './errors.js';
import { startPoints } from './index.js';
import { pointsMigrations } from './migrations.js';
import {
  complaintEvent,
  hex32,
  pointTestConfig,
  publishChainEvent,
  publishVerdict,
  publishViolation,
  startFakeDidSupport,
  startTestPoints,
  userAddress,
  verdictPayload,
  violationPayload,
} from './test-harness.js';
import { openApiValidator } from '../../test/support/openapi-validator.js';

const NOW = 1_800_000_000;
const DAY = 86_400;
const ALICE = userAddress(0xa11ce);
const BOB = userAddress(0xb0b);

describe('points queries over HTTP', () => {
  let db: TestDatabase;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  let relayAdmin: RelayAdminStandIn;
  let did: Awaited<ReturnType<typeof startFakeDidSupport>>;

  const count = async (table: string) =>
    Number((await db.pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    relayAdmin = await startRelayAdminStandIn({ verified: [BOB] });
    did = await startFakeDidSupport(new Map([[ALICE, ['alice.example']]]));
    points = await startTestPoints(
      db,
      pointTestConfig({ relayAdminUrl: relayAdmin.url, didSupportUrl: did.url }),
      { nowSeconds: () => NOW },
    );
    // Alice: three violations, one exactly 90 days old (no longer counts), one in the future of NOW.
    await publishViolation(
      points.bus,
      violationPayload({ bid: hex32(1), party: 'user', subject: ALICE, blockTime: NOW - 10 }),
    );
    await publishViolation(
      points.bus,
      violationPayload({
        bid: hex32(2),
        party: 'user',
        subject: ALICE.toUpperCase().replace('0X', '0x'),
        blockTime: NOW - 90 * DAY + 1,
      }),
    );
    await publishViolation(
      points.bus,
      violationPayload({ bid: hex32(3), party: 'user', subject: ALICE, blockTime: NOW - 90 * DAY }),
    );
    await publishViolation(
      points.bus,
      violationPayload({ bid: hex32(4), party: 'user', subject: ALICE, blockTime: NOW + 5 }),
    );
    // The same violation again (a producer's resend): changes nothing.
    await publishViolation(
      points.bus,
      violationPayload({ bid: hex32(1), party: 'user', subject: ALICE, blockTime: NOW - 10 }),
    );
    // LP "lp-1": 2 normal swaps (30 s and 90 s) and one it broke; one user-broken swap does not count for it.
    await publishVerdict(
      points.bus,
      verdictPayload({
        bid: hex32(10),
        lpId: 'lp-1',
        outcome: 'normal',
        blockTime: NOW - 100,
        responseTimeSeconds: 30,
      }),
    );
    await publishVerdict(
      points.bus,
      verdictPayload({
        bid: hex32(11),
        lpId: 'lp-1',
        outcome: 'normal',
        blockTime: NOW - 200,
        responseTimeSeconds: 90,
      }),
    );
    await publishVerdict(
      points.bus,
      verdictPayload({
        bid: hex32(12),
        lpId: 'lp-1',
        outcome: 'violation',
        party: 'lp',
        case: 3,
        blockTime: NOW - 300,
      }),
    );
    await publishViolation(
      points.bus,
      violationPayload({ bid: hex32(12), party: 'lp', subject: 'lp-1', blockTime: NOW - 300 }),
    );
    await publishVerdict(
      points.bus,
      verdictPayload({
        bid: hex32(13),
        lpId: 'lp-1',
        outcome: 'violation',
        party: 'user',
        case: 5,
        blockTime: NOW - 400,
      }),
    );
    // A complaint with no verdict yet, and one whose verdict arrived.
    await publishChainEvent(
      points.bus,
      complaintEvent({ bid: hex32(20), blockTime: NOW - 50, agreementReachedTime: NOW - 1000 }),
    );
    await publishChainEvent(
      points.bus,
      complaintEvent({ bid: hex32(21), blockTime: NOW - 50, agreementReachedTime: NOW - 1000, logIndex: 1 }),
    );
    await publishVerdict(
      points.bus,
      verdictPayload({
        bid: hex32(21),
        lpId: 'lp-1',
        outcome: 'invalid_complaint',
        case: 0,
        blockTime: NOW - 40,
        complaint: {
          complainant: 'alice.example',
          complainantParty: null,
          valid: false,
          invalidReason: 'complainant is no party',
          fields: {},
        },
      }),
    );
    await points.bus.publish('violations', [{ key: 'x', value: '{"not":"an envelope"}' }]);
    await waitFor(
      async () =>
        (await count('points_deductions')) === 5 &&
        (await count('points_verdicts')) === 5 &&
        (await count('points_complaints')) === 2,
      'the projections',
    );
    await waitFor(
      async () => (await count(`bus_messages WHERE topic = 'violations.dlq'`)) === 1,
      'the poison message in the DLQ',
    );
  });

  afterAll(async () => {
    await points?.close();
    await relayAdmin?.close();
    await did?.close();
    await db?.drop();
  });

  it('scores a user: basis 2, minus a tenth per violation with from < block_time <= now', async () => {
    const { status, body } = await points.get(`/user-point?address=${ALICE}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      score: '1.8',
      score_tenths: 18,
      basis: { tenths: 20 },
      deductions: { violations: 2, tenths: 2 },
      window: { days: 90, from_exclusive: NOW - 90 * DAY, to_inclusive: NOW },
      kyc: { verified: false, known: true, stale: false },
      did: { names: ['alice.example'], stale: false },
    });
    // To the second: a violation counts from its block time on, and until it is 90 days old.
    const at = async (t: number) =>
      (await points.get(`/user-point?address=${ALICE}&at=${t}`)).body.score_tenths;
    expect(await at(NOW - 11)).toBe(18); // bid 1 (NOW − 10) has not happened; bids 2 and 3 count
    expect(await at(NOW - 10)).toBe(17); // bid 1 counts at its own block time
    expect(await at(NOW - 1)).toBe(17); // bid 3 (NOW − 90 d) is one second short of 90 days old
    expect(await at(NOW + 1)).toBe(19); // bid 2 (NOW − 90 d + 1) is exactly 90 days old: only bid 1 counts
    expect(await at(NOW + 5)).toBe(18); // bids 2 and 3 are out, bid 4 (NOW + 5) came in
  });

  it('answers by DID name, and gives a KYC-verified unknown user basis 5 with no records', async () => {
    expect((await points.get('/user-point?did=alice.example')).body).toMatchObject({
      subject: { address: ALICE },
      score_tenths: 18,
    });
    const bob = await points.get(`/user-point?address=${BOB}`);
    expect(bob.body).toMatchObject({
      score: '5.0',
      score_tenths: 50,
      kyc: { verified: true },
      deductions: { violations: 0 },
    });
    expect((await points.get('/user-point?did=nobody.example')).body.code).toBe(
      POINTS_ERRORS.DID_NOT_FOUND.code,
    );
  });

  it('lists deduction records newest first, page by page, each saying whether it counts', async () => {
    const first = await points.get(`/user-deduction-records?address=${ALICE}&limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.records.map((r: any) => [r.bid, r.counts])).toEqual([
      [hex32(1), true],
      [hex32(2), true],
    ]);
    expect(first.body.records[0]).toMatchObject({
      case: 5,
      party: 'user',
      tenths: 1,
      block_time: NOW - 10,
      chains: { source: '9006', destination: '614' },
      transactions: [
        { step: 'transferOut', chain_id: '9006', tx_hash: hex32(NOW - 10, 7), block_time: NOW - 610 },
      ],
    });
    const second = await points.get(
      `/user-deduction-records?address=${ALICE}&limit=2&cursor=${first.body.next_cursor}`,
    );
    expect(second.body.records.map((r: any) => [r.bid, r.counts])).toEqual([[hex32(3), false]]);
    expect(second.body.next_cursor).toBeNull();
    const later = await points.get(`/user-deduction-records?address=${ALICE}&at=${NOW + 5}`);
    expect(later.body.records.map((r: any) => r.bid)).toEqual([hex32(4), hex32(1), hex32(2), hex32(3)]);
  });

  it('scores an LP from its tier criteria, counting only normal swaps and the swaps it broke', async () => {
    const { body } = await points.get('/lp-point?lp_id=lp-1');
    // 3 decided swaps, 2 normal (66.6 % ≥ 60 %), average 60 s < 24 h: the "≥ 1.2" row, basis 1, minus 0.1.
    expect(body).toMatchObject({
      score: '0.9',
      score_tenths: 9,
      basis: { tenths: 10 },
      statistics: {
        decided_swaps: 3,
        normal_swaps: 2,
        success_rate_percent: '66.6',
        average_response_seconds: '60.0',
      },
      deductions: { violations: 1 },
    });
    expect(body.tiers.map((t: any) => t.met)).toEqual([false, false, false, false, true]);
    expect(body.tiers[3].criteria.swaps).toEqual({ required: '>= 6', actual: 3, met: false });
    const records = await points.get('/lp-deduction-records?lp_id=lp-1');
    expect(records.body.records.map((r: any) => r.bid)).toEqual([hex32(12)]);
    const unknown = await points.get('/lp-point?lp_id=nobody');
    expect(unknown.body).toMatchObject({
      score_tenths: 0,
      statistics: { decided_swaps: 0, success_rate_percent: null },
    });
    const ranking = await points.get('/lp-ranking');
    expect(ranking.body.lps).toEqual([expect.objectContaining({ rank: 1, lp_id: 'lp-1', score_tenths: 9 })]);
    // The ranking as of "now" is reused for a few seconds (its `at` says when); `at` always computes afresh.
    await publishVerdict(
      points.bus,
      verdictPayload({ bid: hex32(14), lpId: 'lp-2', outcome: 'normal', blockTime: NOW - 1 }),
    );
    await waitFor(async () => (await count(`points_lp_swaps WHERE lp_id = 'lp-2'`)) === 1, 'the new verdict');
    expect((await points.get('/lp-ranking')).body).toMatchObject({ at: NOW, total: 1 });
    const fresh = await points.get(`/lp-ranking?at=${NOW}`);
    expect(fresh.body.lps.map((l: any) => l.lp_id)).toEqual(['lp-1', 'lp-2']);
  });

  it('shows a complaint as pending with its deadlines, or with its verdict and evidence', async () => {
    const pending = await points.get(`/complaint?bid=${hex32(20)}`);
    expect(pending.body).toMatchObject({
      status: 'pending',
      verdict: null,
      complaint: { complainant: 'alice.example' },
    });
    expect(pending.body.pending.deadlines).toEqual([
      expect.objectContaining({ step: 'transferOut', chain_id: '9006', by_block_time: NOW - 1000 + 60 }),
      expect.objectContaining({ step: 'transferIn', chain_id: '614', by_block_time: NOW - 1000 + 120 }),
      expect.objectContaining({ step: 'confirmOut', by_block_time: NOW - 1000 + 180 }),
      expect.objectContaining({ step: 'confirmIn', by_block_time: NOW - 1000 + 210 }),
    ]);
    const decided = await points.get(`/complaint?bid=${hex32(21).toUpperCase().replace('0X', '0x')}`);
    expect(decided.body).toMatchObject({
      status: 'decided',
      pending: null,
      verdict: { outcome: 'invalid_complaint', case: 0 },
      complaint: { valid: false, invalidReason: 'complainant is no party' },
      evidence: { userConsent: true },
    });
    expect(decided.body.complaints_on_chain).toHaveLength(1);
    // As of a moment: before its verdict (NOW − 40) the complaint was pending; before it was filed, unknown.
    const before = await points.get(`/complaint?bid=${hex32(21)}&at=${NOW - 41}`);
    expect(before.body).toMatchObject({ status: 'pending', verdict: null });
    expect((await points.get(`/complaint?bid=${hex32(21)}&at=${NOW - 51}`)).status).toBe(404);
    const none = await points.get(`/complaint?bid=${hex32(99)}`);
    expect(none).toMatchObject({ status: 404, body: { code: POINTS_ERRORS.COMPLAINT_NOT_FOUND.code } });
  });

  it('refuses bad parameters with 400 {code, message} naming them, and unknown routes with 404', async () => {
    const bad = [
      '/user-point',
      '/user-point?address=0x123',
      `/user-point?address=${ALICE}&did=alice.example`,
      `/user-point?address=${ALICE}&at=-1`,
      `/user-point?address=${ALICE}&at=1.5`,
      `/user-point?adress=${ALICE}`,
      `/user-point?address=${ALICE}&address=${BOB}`,
      '/lp-point',
      `/lp-point?lp_id=${'a'.repeat(1_001)}`,
      `/user-deduction-records?address=${ALICE}&limit=0`,
      `/user-deduction-records?address=${ALICE}&limit=101`,
      `/user-deduction-records?address=${ALICE}&cursor=garbage`,
      '/complaint?bid=0x12',
      '/lp-ranking?limit=1001',
    ];
    for (const path of bad) {
      const { status, body } = await points.get(path);
      expect({ path, status, code: body.code }).toEqual({
        path,
        status: 400,
        code: POINTS_ERRORS.INVALID_QUERY.code,
      });
      expect(typeof body.message).toBe('string');
    }
    expect((await points.get('/user-point?address=0x123')).body.message).toMatch(/address/);
    expect((await points.get(`/user-point?adress=${ALICE}`)).body.message).toMatch(
      /unknown parameter adress/,
    );
    const missing = await points.get('/nope');
    expect(missing).toMatchObject({ status: 404, body: { code: POINTS_ERRORS.ROUTE_NOT_FOUND.code } });
  });

  it("the dashboard's score history: in one request, the score as of each deduction's time", async () => {
    for (const [query, point] of [
      [`address=${ALICE}`, (t: number) => `/user-point?address=${ALICE}&at=${t}`],
      ['lp_id=lp-1', (t: number) => `/lp-point?lp_id=lp-1&at=${t}`],
    ] as const) {
      const { status, body } = await points.get(`/dashboard/score-history?${query}`);
      expect(status).toBe(200);
      const records = await points.get(
        `/${query.startsWith('lp') ? 'lp' : 'user'}-deduction-records?${query}&limit=100`,
      );
      const times = [...new Set<number>(records.body.records.map((r: any) => r.block_time))].sort(
        (a, b) => a - b,
      );
      expect(times.length).toBeGreaterThan(0);
      expect(body.points.map((p: any) => p.at)).toEqual(times);
      for (const p of body.points)
        expect(p.score_tenths, `${query} at ${p.at}`).toBe((await points.get(point(p.at))).body.score_tenths);
    }
    const refused = await points.get(`/dashboard/score-history?address=${ALICE}&lp_id=lp-1`);
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/exactly one of address and lp_id/);
  });

  it('answers as its served OpenAPI document says, every property of every 200 answer present', async () => {
    const doc = (await points.get('/openapi.json')).body as {
      paths: Record<string, { get: { responses: Record<string, { content: Record<string, any> }> } }>;
    };
    const ajv = openApiValidator();
    const answered = new Set<string>();
    for (const url of [
      `/user-point?address=${ALICE}`,
      `/user-point?address=${BOB}&at=${NOW - 100}`,
      '/user-point?did=alice.example',
      '/lp-point?lp_id=lp-1',
      '/lp-point?lp_id=nobody',
      `/user-deduction-records?address=${ALICE}&limit=2`,
      '/lp-deduction-records?lp_id=lp-1',
      `/complaint?bid=${hex32(20)}`,
      `/complaint?bid=${hex32(21)}`,
      '/lp-ranking',
      '/dashboard/verdicts',
      `/dashboard/score-history?address=${ALICE}`,
      '/dashboard/score-history?lp_id=lp-1',
      '/dashboard/pipeline',
    ]) {
      const path = url.split('?')[0]!;
      const validate = ajv.compile(doc.paths[path]!.get.responses['200']!.content['application/json'].schema);
      const answer = await points.get(url);
      expect(answer.status, url).toBe(200);
      expect(validate(answer.body), `${url}: ${ajv.errorsText(validate.errors)}`).toBe(true);
      answered.add(path);
    }
    expect([...answered].sort()).toEqual(Object.keys(doc.paths).sort());
  });

  it('serves its OpenAPI document and counts events and queries on /metrics', async () => {
    const doc = await points.get('/openapi.json');
    expect(Object.keys(doc.body.paths).sort()).toEqual([
      '/complaint',
      '/dashboard/pipeline',
      '/dashboard/score-history',
      '/dashboard/verdicts',
      '/lp-deduction-records',
      '/lp-point',
      '/lp-ranking',
      '/user-deduction-records',
      '/user-point',
    ]);
    const verdicts = await points.get('/dashboard/verdicts');
    expect(verdicts.status).toBe(200);
    expect(verdicts.body.total).toBeGreaterThan(0);
    expect(
      Object.values(verdicts.body.series as Record<string, number[]>)
        .flat()
        .reduce((a, b) => a + b, 0),
    ).toBe(verdicts.body.total);
    expect((await points.get('/dashboard/verdicts?since=abc')).status).toBe(400);
    expect((await points.get('/dashboard/pipeline')).body).toHaveProperty('consumers');
    const page = await fetch(`${points.base}/dashboard/`);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect((await fetch(`${points.base}/dashboard/vendor/chart.umd.min.js`)).status).toBe(200);
    expect((await fetch(`${points.base}/dashboard/vendor/chart.cjs`)).status).toBe(404);
    const text = await (await fetch(`${points.base}/metrics`)).text();
    expect(text).toMatch(/points_events_total\{topic="violations",outcome="duplicate"\} 1/);
    expect(text).toMatch(/points_events_total\{topic="violations",outcome="applied"\} 5/);
    expect(text).toMatch(/points_query_seconds_count\{route="\/user-point",status="200"\} \d+/);
  });

  it('says on /metrics whether the score cache is answering: 0 while its LISTEN connection is lost', async () => {
    const listening = async () =>
      /^points_score_cache_listening (\d)$/m.exec(await (await fetch(`${points.base}/metrics`)).text())?.[1];
    await waitFor(async () => (await listening()) === '1', 'the cache to listen');
    await db.pool.query(
      // Of this test's database only: the files run beside it have Points listeners of their own.
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = 'otmoic-points-listen' AND datname = current_database()`,
    );
    await waitFor(async () => (await listening()) === '0', 'the gauge to say the cache is bypassed');
    await waitFor(async () => (await listening()) === '1', 'the listener to reconnect', 10_000);
  });
});

describe('records and LP ids at the edges', () => {
  // Block times of 9 and 10 digits: ordered as text, they would come in the wrong order.
  const T = 1_000_000_000;
  let db: TestDatabase;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  const LPS = ['LP Nord', 'a'.repeat(201), 'Équipe-LP'];

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    points = await startTestPoints(db, pointTestConfig(), { nowSeconds: () => T + 100 });
    for (const [i, blockTime] of [T - 1, T, T + 1].entries())
      await publishViolation(
        points.bus,
        violationPayload({ bid: hex32(1 + i), party: 'user', subject: ALICE, blockTime }),
      );
    for (const [i, lpId] of LPS.entries())
      await publishVerdict(
        points.bus,
        verdictPayload({ bid: hex32(10 + i), lpId, outcome: 'normal', blockTime: T - 100 }),
      );
    await waitFor(
      async () =>
        Number((await db.pool.query('SELECT count(*) AS n FROM points_lp_swaps')).rows[0].n) === LPS.length &&
        Number((await db.pool.query('SELECT count(*) AS n FROM points_deductions')).rows[0].n) === 3,
      'the projections',
    );
  });
  afterAll(async () => {
    await points?.close();
    await db?.drop();
  });

  it('lists deduction records newest first by block time as a number, and pages through every one', async () => {
    const all = await points.get(`/user-deduction-records?address=${ALICE}`);
    expect(all.body.records.map((r: any) => r.block_time)).toEqual([T + 1, T, T - 1]);
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: any } = await points.get(
        `/user-deduction-records?address=${ALICE}&limit=1${cursor ? `&cursor=${cursor}` : ''}`,
      );
      seen.push(...page.body.records.map((r: any) => r.block_time));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([T + 1, T, T - 1]);
  });

  it('looks up every LP the ranking lists, whatever its string', async () => {
    const ranking = await points.get('/lp-ranking');
    expect(ranking.body.lps.map((lp: any) => lp.lp_id).sort()).toEqual([...LPS].sort());
    for (const lp of ranking.body.lps) {
      const answer = await points.get(`/lp-point?lp_id=${encodeURIComponent(lp.lp_id)}`);
      expect(answer.status, lp.lp_id).toBe(200);
      expect(answer.body.statistics.decided_swaps).toBe(1);
    }
    const nul = await points.get(`/lp-point?lp_id=${encodeURIComponent('lp\u0000x')}`);
    expect(nul.status).toBe(400);
    expect(nul.body.message).toMatch(/^lp_id: must be 1 to 1000 characters without U\+0000/);
  });

  it('names a repeated parameter as repeated, and a missing one as missing', async () => {
    const repeated = await points.get('/lp-point?lp_id=a&lp_id=b');
    expect(repeated.status).toBe(400);
    expect(repeated.body).toEqual({ code: 32001, message: 'lp_id: is given more than once' });
    const missing = await points.get('/lp-point');
    expect(missing.body).toEqual({ code: 32001, message: 'lp_id: is required' });
  });
});

describe('points with its database down', () => {
  it('answers 503 {code, message} and says nothing internal', async () => {
    const pool = createPool('postgres://nobody@127.0.0.1:1/none', { max: 2 });
    const log = createLogger({ level: 'silent' });
    const points = await startPoints(
      {
        db: pool,
        dbUrl: 'postgres://nobody@127.0.0.1:1/none',
        bus: undefined as never,
        log,
        metrics: new Registry(),
      },
      pointTestConfig(),
      { consume: false },
    );
    try {
      const response = await fetch(`http://127.0.0.1:${points.port}/lp-point?lp_id=lp-1`);
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({
        code: POINTS_ERRORS.STORE_UNAVAILABLE.code,
        message: 'the database is unavailable; retry',
      });
    } finally {
      await points.stop();
      await pool.end();
    }
  });
});

describe('a verdict that rests on a complaint, as of a moment before the complaint', () => {
  // Case 1: no TransferOut by T+E. The verdict's block time is T+E, but it answers a complaint filed later.
  const T = NOW - 10_000;
  const FILED = T + 60 + 500;
  let db: TestDatabase;
  let points: Awaited<ReturnType<typeof startTestPoints>>;

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    points = await startTestPoints(db, pointTestConfig(), { nowSeconds: () => NOW });
    const complaint = complaintEvent({ bid: hex32(30), blockTime: FILED, agreementReachedTime: T });
    await publishChainEvent(points.bus, complaint);
    const verdict = verdictPayload({
      bid: hex32(30),
      lpId: 'lp-1',
      outcome: 'violation',
      party: 'user',
      case: 1,
      blockTime: T + 60,
      complaint: {
        complainant: 'lp-1',
        complainantParty: 'lp',
        valid: true,
        invalidReason: null,
        fields: complaint.kind === 'Complaint' ? complaint.complaint : {},
      },
    });
    verdict.transactions = [{ step: 'complaint', chainId: '614', txHash: hex32(FILED, 9), blockTime: FILED }];
    await publishVerdict(points.bus, verdict);
    await waitFor(
      async () =>
        Number((await db.pool.query('SELECT count(*) AS n FROM points_verdicts')).rows[0].n) === 1 &&
        Number((await db.pool.query('SELECT count(*) AS n FROM points_complaints')).rows[0].n) === 1,
      'the projections',
    );
  });
  afterAll(async () => {
    await points?.close();
    await db?.drop();
  });

  it('is not shown as reached before its complaint was filed, nor that complaint with it', async () => {
    expect((await points.get(`/complaint?bid=${hex32(30)}`)).body).toMatchObject({
      status: 'decided',
      verdict: { case: 1 },
    });
    expect((await points.get(`/complaint?bid=${hex32(30)}&at=${FILED}`)).body).toMatchObject({
      status: 'decided',
      verdict: { case: 1 },
    });
    // After T+E but before the complaint: nothing was filed and nothing was decided yet.
    const before = await points.get(`/complaint?bid=${hex32(30)}&at=${FILED - 1}`);
    expect(before).toMatchObject({ status: 404, body: { code: POINTS_ERRORS.COMPLAINT_NOT_FOUND.code } });
  });
});
