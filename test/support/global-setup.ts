import { mkdtemp, rm } from 'node:fs/promises';
import { chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../shared/db/embedded.js';
import { freePort } from '../../shared/net/free-port.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Server-level URL the test files create their own databases on. */
    databaseUrl: string;
    databaseSource: 'DATABASE_URL' | 'embedded';
  }
}

/**
 * One real PostgreSQL for the whole run: the server of DATABASE_URL when it is set, otherwise an embedded
 * one started here (binaries from npm) in a temporary directory and removed afterwards.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.DATABASE_URL) {
    project.provide('databaseUrl', process.env.DATABASE_URL);
    project.provide('databaseSource', 'DATABASE_URL');
    return async () => undefined;
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-test-pg-'));
  await chmod(dir, 0o755); // the postgres OS user must reach the data dir inside it
  const server = await startEmbeddedPostgres({
    dataDir: path.join(dir, 'data'),
    port: await freePort(),
    database: 'otmoic_test',
  });
  project.provide('databaseUrl', server.url);
  project.provide('databaseSource', 'embedded');
  return async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
