/**
 * `npm run bench -- points`: requests/s and p50/p99 latency of GET /user-point and /lp-point over real HTTP
 * (keep-alive, 16 in flight) beside a bare fastify route on the same server, with 100,000 users, 1,000 LPs,
 * 1,000,000 violations and 1,000,000 LP swap verdicts loaded (BENCH_POINTS_SCALE scales the counts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { createLogger } from '../shared/logging/logger.js';
import { createHttpServer } from '../shared/runtime/http.js';
import { startRelayAdminStandIn } from '../services/stand-ins/relay-admin/server.js';
import { listenForChanges } from '../services/points/facts-cache.js';
import { createPointsQueries } from '../services/points/index.js';
import { pointsMetrics } from '../services/points/metrics.js';
import { pointsMigrations } from '../services/points/migrations.js';
import { registerPointsRoutes } from '../services/points/routes.js';
import { startFakeDidSupport } from '../services/points/test-harness.js';
import type { BenchSection } from './report.js';
import { fmt, printTable, scratchDatabase } from './support.js';

const SCALE = Number(process.env.BENCH_POINTS_SCALE ?? 1);
const USERS = Math.round(100_000 * SCALE);
const LPS = Math.max(10, Math.round(1_000 * SCALE));
const VIOLATIONS = Math.round(1_000_000 * SCALE);
const LP_VIOLATIONS = Math.round(VIOLATIONS / 10); // 10 % of violations are LPs'
const SWAPS = Math.round(1_000_000 * SCALE);
/** Distinct users the measured requests pick from (their KYC / DID lookups are cached during warm-up). */
const SAMPLE_USERS = 5_000;
const CONCURRENCY = 16;
const WARM_UP_MS = 1_000;
const BUDGET_MS = Number(process.env.BENCH_POINTS_MS ?? 4_000);
const NOW = 1_800_000_000;
const WINDOW = 90 * 86_400;

const userAddress = (i: number) => '0x' + i.toString(16).padStart(40, '0');

interface Measurement {
  rate: number;
  latencies: number[];
}

async function measure(port: number, paths: () => string, ms: number): Promise<Measurement> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const latencies: number[] = [];
  const one = (path: string) =>
    new Promise<void>((resolve, reject) => {
      const started = performance.now();
      const request = http.request({ port, path, agent }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => {
          latencies.push(performance.now() - started);
          if (response.statusCode === 200 && text.includes('"score_tenths"') !== path.startsWith('/bare'))
            resolve();
          else reject(new Error(`${path}: unexpected answer ${response.statusCode} ${text.slice(0, 200)}`));
        });
      });
      request.on('error', reject);
      request.end();
    });
  let done = 0;
  const started = performance.now();
  const deadline = started + ms;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        await one(paths());
        done++;
      }
    }),
  );
  const elapsed = performance.now() - started;
  agent.destroy();
  return { rate: (done * 1000) / elapsed, latencies };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function load(pool: import('pg').Pool): Promise<number> {
  const started = performance.now();
  // Server-side multi-row inserts (INSERT … SELECT generate_series): no per-row round trips.
  await pool.query(
    `INSERT INTO points_deductions (bid_id, party, subject, arbitration_case, src_chain_id, dst_chain_id, chain_id,
       block_time, rule, tenths, transactions, event_id)
     SELECT '0x' || lpad(to_hex(i), 64, '0'),
       CASE WHEN i <= $2 THEN 'lp' ELSE 'user' END,
       CASE WHEN i <= $2 THEN 'lp-' || (i % $3) ELSE '0x' || lpad(to_hex(i % $4), 40, '0') END,
       CASE WHEN i <= $2 THEN 3 ELSE 5 END, '9006', '614', '9006',
       $5 - (i::bigint * 7919) % ($6 + 86400 * 30), 'case 5: no ConfirmOut by the user by T+3E', 1,
       jsonb_build_array(jsonb_build_object('step', 'transferOut', 'chainId', '9006',
         'txHash', '0x' || lpad(to_hex(i), 64, 'a'), 'blockTime', $5 - 1000)),
       'violation:0x' || lpad(to_hex(i), 64, '0')
     FROM generate_series(1, $1) AS i`,
    [VIOLATIONS, LP_VIOLATIONS, LPS, USERS, NOW, WINDOW],
  );
  await pool.query(
    `INSERT INTO points_lp_swaps (bid_id, lp_id, block_time, normal, response_time_seconds)
     SELECT '0xbb' || lpad(to_hex(i), 62, '0'), 'lp-' || (i % $2), $3 - (i::bigint * 104729) % ($4 + 86400 * 30),
       i % 50 <> 0, CASE WHEN i % 50 <> 0 THEN 20 + i % 90 END
     FROM generate_series(1, $1) AS i`,
    [SWAPS, LPS, NOW, WINDOW],
  );
  // Fresh statistics and a visibility map: counts are index-only scans, as on a long-running database.
  await pool.query('VACUUM ANALYZE points_deductions, points_lp_swaps');
  return performance.now() - started;
}

export async function run(): Promise<BenchSection[]> {
  const db = await scratchDatabase([pointsMigrations]);
  const relayAdmin = await startRelayAdminStandIn({
    verified: Array.from({ length: SAMPLE_USERS / 10 }, (_, i) => userAddress(i * 10)),
  });
  const did = await startFakeDidSupport();
  try {
    const loadMs = await load(db.pool);
    console.log(
      `points queries over HTTP (${db.source}): ${fmt(USERS)} users, ${fmt(LPS)} LPs, ${fmt(VIOLATIONS)} violations, ${fmt(SWAPS)} LP swaps loaded in ${(loadMs / 1000).toFixed(1)} s; ${CONCURRENCY} keep-alive requests in flight, ${BUDGET_MS} ms per route (node ${process.version})`,
    );
    const log = createLogger({ level: 'silent' });
    const metrics = new Registry();
    const { queries, cache } = createPointsQueries(
      { log, metrics, db: db.pool },
      {
        port: 1,
        relayAdminUrl: relayAdmin.url,
        didSupportUrl: did.url,
        refreshInterval: 3_600_000,
        windowDays: 90,
        lookBackDays: 90,
        lookupTimeoutMs: 1_000,
        rateLimit: { max: 1_000_000, windowMs: 60_000 },
        queryTimeoutMs: 5_000,
        corsOrigins: [],
      },
      { nowSeconds: () => NOW },
    );
    const listener = listenForChanges({ dbUrl: db.url, cache, log });
    while (!cache.enabled) await new Promise((r) => setTimeout(r, 20));
    const app = createHttpServer({ service: 'points', log, metrics, db: db.pool, ownErrorVocabulary: true });
    registerPointsRoutes(app, { queries, log, metrics: pointsMetrics(metrics) });
    app.get('/bare', async () => ({ bare: true }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as AddressInfo).port;

    // Warm the KYC / DID caches of the sampled users (a user's first query pays one lookup per refresh).
    for (let i = 0; i < SAMPLE_USERS; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, k) => queries.userPoint({ address: userAddress(i + k) })),
      );
    }
    // And every LP's facts (an LP's first query loads its swaps once).
    for (let i = 0; i < LPS; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, LPS - i) }, (_, k) => queries.lpPoint({ lp_id: `lp-${i + k}` })),
      );
    }
    const pick = (n: number) => Math.floor(Math.random() * n);
    let cold = 0;
    const cases: Array<[string, () => string]> = [
      ['bare fastify route', () => '/bare'],
      ['GET /user-point', () => `/user-point?address=${userAddress(pick(SAMPLE_USERS))}`],
      ['GET /lp-point', () => `/lp-point?lp_id=lp-${pick(LPS)}`],
      // Each request a user never asked about: KYC, DID and the facts are all fetched (the miss path).
      [
        'GET /user-point, first query of a user',
        () => `/user-point?address=${userAddress(SAMPLE_USERS + (cold++ % (USERS - SAMPLE_USERS)))}`,
      ],
    ];
    for (const [, paths] of cases) await measure(port, paths, WARM_UP_MS);
    // Four rounds, interleaved, so a load change on the shared machine hits every route alike.
    const ROUNDS = 4;
    const results = cases.map(() => ({ rate: 0, latencies: [] as number[] }));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [index, [, paths]] of cases.entries()) {
        const m = await measure(port, paths, BUDGET_MS / ROUNDS);
        results[index]!.rate += m.rate / ROUNDS;
        results[index]!.latencies.push(...m.latencies);
      }
    }
    printTable(
      'requests/s and latency (same server, same client)',
      cases.map(([label], i) => {
        const r = results[i]!;
        const sorted = r.latencies.sort((a, b) => a - b);
        const ratio =
          i === 0 ? '' : ` = ${((r.rate / results[0]!.rate) * 100).toFixed(0)} % of the bare route`;
        return [
          label,
          `${fmt(r.rate).padStart(7)} req/s, p50 ${percentile(sorted, 50).toFixed(2)} ms, p99 ${percentile(sorted, 99).toFixed(2)} ms${ratio}`,
        ];
      }),
    );
    const lookups = (await metrics.getSingleMetric('points_lookups_total')?.get())?.values ?? [];
    console.log(
      `\n  KYC / DID lookups: ${lookups.map((v) => `${v.labels.service} ${v.labels.outcome} ${v.value}`).join(', ')}`,
    );
    const sample = await queries.lpPoint({ lp_id: 'lp-1' });
    console.log(
      `\n  e.g. lp-1: ${sample.statistics.decided_swaps} decided swaps and ${sample.deductions.violations} violations in the window, score ${sample.score}`,
    );
    await app.close();
    await listener.stop();
    return [
      {
        title: `points queries over HTTP: ${fmt(USERS)} users, ${fmt(LPS)} LPs, ${fmt(VIOLATIONS)} violations, ${fmt(SWAPS)} LP swaps (loaded in ${(loadMs / 1000).toFixed(1)} s), ${CONCURRENCY} requests in flight`,
        rows: cases.map(([label], i) => {
          const r = results[i]!;
          const value = `${fmt(r.rate)} req/s (p50 ${percentile(r.latencies, 50).toFixed(2)} ms, p99 ${percentile(r.latencies, 99).toFixed(2)} ms)`;
          return i === 0
            ? { measure: label, value, note: 'baseline' }
            : {
                measure: label,
                value,
                baseline: `${fmt(results[0]!.rate)} req/s`,
                ratio: r.rate / results[0]!.rate,
              };
        }),
      },
    ];
  } finally {
    await relayAdmin.close();
    await did.close();
    await db.dispose();
  }
}
