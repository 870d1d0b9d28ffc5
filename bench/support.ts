import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../shared/db/embedded.js';
import { freePort } from '../shared/net/free-port.js';

/** A PostgreSQL for a benchmark: DATABASE_URL when set, else a throw-away embedded server. */
export async function benchDatabase(): Promise<{ url: string; source: string; stop(): Promise<void> }> {
  if (process.env.DATABASE_URL) {
    return { url: process.env.DATABASE_URL, source: 'DATABASE_URL', stop: async () => undefined };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-bench-'));
  await chmod(dir, 0o755);
  const server = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort(), database: 'bench' });
  return {
    url: server.url,
    source: 'embedded PostgreSQL 17',
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
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
