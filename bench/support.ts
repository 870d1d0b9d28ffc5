import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../shared/db/embedded.js';
import { migrate, type MigrationSet } from '../shared/db/migrate.js';
import { coreMigrations } from '../shared/db/migrations/core.js';
import { createPool, type Pool } from '../shared/db/pool.js';
import { freePort } from '../shared/net/free-port.js';
import { noteDatabase } from './report.js';

/** The embedded bench server's shared_buffers (a quarter of this machine's memory would be 6 GB). */
const BENCH_SHARED_BUFFERS = '1GB';

/** A PostgreSQL for a benchmark: DATABASE_URL when set, else a throw-away embedded server. */
export async function benchDatabase(): Promise<{ url: string; source: string; stop(): Promise<void> }> {
  if (process.env.DATABASE_URL) {
    return { url: process.env.DATABASE_URL, source: 'DATABASE_URL', stop: async () => undefined };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-bench-'));
  await chmod(dir, 0o755);
  const server = await startEmbeddedPostgres({
    dataDir: path.join(dir, 'pg'),
    port: await freePort(),
    database: 'bench',
    // As a server is set up for its data: the default 128 MB holds none of the replay's tables and indexes
    // at 250,000 swaps (the log alone is about 4 GB).
    settings: { shared_buffers: BENCH_SHARED_BUFFERS },
  });
  return {
    url: server.url,
    source: 'embedded PostgreSQL 17',
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A throw-away database with the core migrations (and `extra`) applied, on benchDatabase()'s server. */
export async function scratchDatabase(extra: readonly MigrationSet[] = []): Promise<{
  url: string;
  source: string;
  pool: Pool;
  dispose(): Promise<void>;
}> {
  const server = await benchDatabase();
  const name = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  const pool = createPool(url.toString(), { max: 12 });
  await migrate(pool, [coreMigrations, ...extra]);
  const version = await pool.query<{ server_version: string }>('SHOW server_version');
  const settings = await pool.query<{ fsync: string; shared_buffers: string }>(
    `SELECT current_setting('fsync') AS fsync, current_setting('shared_buffers') AS shared_buffers`,
  );
  const { fsync, shared_buffers } = settings.rows[0]!;
  noteDatabase(
    `PostgreSQL ${version.rows[0]!.server_version} (${server.source === 'DATABASE_URL' ? 'DATABASE_URL' : 'embedded, from npm'}, fsync ${fsync}, shared_buffers ${shared_buffers})`,
  );
  return {
    url: url.toString(),
    source: server.source,
    pool,
    async dispose() {
      await pool.end();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
      await server.stop();
    },
  };
}

export function rate(count: number, ms: number): number {
  return (count * 1_000) / ms;
}

export function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function printTable(title: string, rows: Array<[string, string]>): void {
  console.log(`\n${title}`);
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
}
