/**
 * `test/support/schemathesis.sh` runs this after the relay's run: an Agent on a fresh devnet and a fresh
 * database (DATABASE_URL's server, else an embedded PostgreSQL in a temporary directory), then schemathesis
 * (the CLI path is argv[2]) against the Agent's served OpenAPI document. Fails on any 5xx or answer that does
 * not match the document. DID ownership is read from the devnet's registry; the rate limits are out of the way.
 */
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Registry } from 'prom-client';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { startEmbeddedPostgres } from '../../shared/db/embedded.js';
import { migrate } from '../../shared/db/migrate.js';
import { coreMigrations } from '../../shared/db/migrations/core.js';
import { createPool } from '../../shared/db/pool.js';
import { startDevnet } from '../../shared/devnet/devnet.js';
import { createLogger } from '../../shared/logging/logger.js';
import { freePort } from '../../shared/net/free-port.js';
import { startAgent } from '../../services/agent/index.js';
import { agentMigrationSets } from '../../services/agent/migrations.js';
import { agentTestConfig } from '../../services/agent/test-harness.js';
import { complaintCommands } from '../../topics/complaint.commands.js';
import { topicSpec } from '../../topics/envelope.js';

const st = process.argv[2];
if (st === undefined) throw new Error('usage: schemathesis-agent.ts <path of the st CLI>');
const examples = process.env.SCHEMATHESIS_EXAMPLES ?? '25';

const cleanups: (() => Promise<unknown>)[] = [];
let code = 1;
try {
  let serverUrl = process.env.DATABASE_URL;
  if (serverUrl === undefined) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-schemathesis-agent-pg-'));
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
  const name = `schemathesis_agent_${process.pid}`;
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
  await migrate(pool, [coreMigrations, ...agentMigrationSets]);

  const devnet = await startDevnet({ chains: [{ chainId: 97 }] });
  cleanups.push(() => devnet.stop());
  const chain = devnet.chain(97);
  const log = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
  const bus = new PostgresBus({ pool, connectionString: url.toString(), log, idlePollMs: 200 });
  await bus.ensureTopics([topicSpec(complaintCommands, 4)]);
  cleanups.push(() => bus.close());
  const agent = await startAgent(
    { db: pool, bus, log, metrics: new Registry() },
    agentTestConfig({ rpc: chain.rpcUrl, contractAddr: chain.contracts.reputation, didSource: 'contract' }),
  );
  cleanups.push(() => agent.stop());
  const base = `http://127.0.0.1:${agent.port}`;

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
