/**
 * `test/support/schemathesis.sh` runs this: Points on a fresh database (DATABASE_URL's server, else an
 * embedded PostgreSQL in a temporary directory) holding a few verdicts and violations, with its KYC and DID
 * services unreachable (the stale paths), then schemathesis (the CLI path is argv[2]) against its served
 * OpenAPI document. Fails on any 5xx or answer that does not match the document.
 */
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../shared/db/embedded.js';
import { migrate } from '../../shared/db/migrate.js';
import { coreMigrations } from '../../shared/db/migrations/core.js';
import { createPool } from '../../shared/db/pool.js';
import { freePort } from '../../shared/net/free-port.js';
import { pointsMigrations } from '../../services/points/migrations.js';
import {
  hex32,
  pointTestConfig,
  startTestPoints,
  userAddress,
  verdictPayload,
  violationPayload,
} from '../../services/points/test-harness.js';
import { encode, envelope } from '../../topics/envelope.js';
import { swapVerdicts, verdictId } from '../../topics/swap.verdicts.js';
import { violationId, violations } from '../../topics/violations.js';

const st = process.argv[2];
if (st === undefined) throw new Error('usage: schemathesis-points.ts <path of the st CLI>');
const examples = process.env.SCHEMATHESIS_EXAMPLES ?? '25';

const cleanups: (() => Promise<unknown>)[] = [];
let code = 1;
try {
  let serverUrl = process.env.DATABASE_URL;
  if (serverUrl === undefined) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-schemathesis-pg-'));
    await chmod(dir, 0o755);
    const server = await startEmbeddedPostgres({
      dataDir: path.join(dir, 'data'),
      port: await freePort(),
      database: 'otmoic_test',
    });
    cleanups.push(
      () => rm(dir, { recursive: true, force: true }),
      () => server.stop(),
    );
    serverUrl = server.url;
  }
  const name = `schemathesis_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  cleanups.push(async () => {
    const dropper = new pg.Client({ connectionString: serverUrl });
    await dropper.connect();
    await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await dropper.end();
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const pool = createPool(url.toString(), { max: 10 });
  cleanups.push(() => pool.end());
  await migrate(pool, [coreMigrations, pointsMigrations]);

  const points = await startTestPoints({ pool, url: url.toString() }, pointTestConfig());
  cleanups.push(() => points.close());
  // A few decided swaps, so the answers have records, statistics and a ranking to show.
  const now = Math.floor(Date.now() / 1000) - 3_600;
  const bids = [1, 2, 3, 4, 5].map((n) => hex32(n));
  await points.bus.publish(
    swapVerdicts.name,
    bids.map((bid, i) => {
      const v = verdictPayload({
        bid,
        lpId: 'lp-1',
        user: userAddress(i + 1),
        outcome: i < 3 ? 'normal' : 'violation',
        party: i < 3 ? null : i === 3 ? 'lp' : 'user',
        case: i < 3 ? null : i === 3 ? 3 : 5,
        blockTime: now + i,
      });
      return encode(
        swapVerdicts,
        envelope(swapVerdicts, v, { occurredAt: now + i, source: 'st', id: verdictId(bid) }),
      );
    }),
  );
  await points.bus.publish(
    violations.name,
    [3, 4].map((i) => {
      const v = violationPayload({
        bid: bids[i]!,
        party: i === 3 ? 'lp' : 'user',
        subject: i === 3 ? 'lp-1' : userAddress(i + 1),
        blockTime: now + i,
      });
      return encode(
        violations,
        envelope(violations, v, { occurredAt: now + i, source: 'st', id: violationId(bids[i]!) }),
      );
    }),
  );
  const base = points.base;

  const args = [
    'run',
    `${base}/openapi.json`,
    '--url',
    base,
    '--checks',
    'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance',
    '--max-examples',
    examples,
    '--workers',
    '2',
    '--phases',
    'examples,coverage,fuzzing',
    '--generation-database',
    'none',
    '--request-timeout',
    '20',
    '--no-color',
  ];
  console.log(`schemathesis: ${st} ${args.join(' ')}`);
  code = await new Promise<number>((resolve, reject) => {
    const child = spawn(st, args, { stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (exitCode) => resolve(exitCode ?? 1));
  });
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
}
process.exit(code);
