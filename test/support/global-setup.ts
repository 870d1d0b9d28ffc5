import { mkdtemp, rm } from 'node:fs/promises';
import { chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../shared/db/embedded.js';
import { freePort } from '../../shared/net/free-port.js';
import { startProductionServers } from './production-servers.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Server-level URL the test files create their own databases on. */
    databaseUrl: string;
    databaseSource: 'DATABASE_URL' | 'embedded';
    /** A Kafka broker started for this run (comma-separated host:port), or '' with `kafkaSkip` saying why. */
    kafkaBrokers: string;
    kafkaSkip: string;
    /** A MongoDB-compatible server (FerretDB) started for this run, or '' with `mongoSkip` saying why. */
    mongoUrl: string;
    mongoSkip: string;
  }
}

/**
 * One real PostgreSQL for the whole run: the server of DATABASE_URL when it is set, otherwise an embedded
 * one started here (binaries from npm) in a temporary directory and removed afterwards. Beside it, when the
 * tools are on the machine, a Kafka broker and FerretDB (test/support/production-servers.ts) for the
 * production profile's suites.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const production = startProductionServers();
  const stops: Array<() => Promise<void>> = [];
  try {
    if (process.env.DATABASE_URL) {
      project.provide('databaseUrl', process.env.DATABASE_URL);
      project.provide('databaseSource', 'DATABASE_URL');
    } else {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-test-pg-'));
      await chmod(dir, 0o755); // the postgres OS user must reach the data dir inside it
      const server = await startEmbeddedPostgres({
        dataDir: path.join(dir, 'data'),
        port: await freePort(),
        database: 'otmoic_test',
      });
      project.provide('databaseUrl', server.url);
      project.provide('databaseSource', 'embedded');
      stops.push(async () => {
        await server.stop();
        await rm(dir, { recursive: true, force: true });
      });
    }
    const servers = await production;
    stops.push(servers.stop);
    // CI must exercise the production adapters: a missing server fails the run instead of skipping suites.
    const missing = [
      servers.kafkaSkip && `Kafka: ${servers.kafkaSkip}`,
      servers.mongoSkip && `MongoDB: ${servers.mongoSkip}`,
    ];
    if (process.env.OTMOIC_REQUIRE_PRODUCTION_SERVERS === '1' && missing.some(Boolean))
      throw new Error(`production servers required but missing: ${missing.filter(Boolean).join('; ')}`);
    project.provide('kafkaBrokers', servers.kafkaBrokers ?? '');
    project.provide('kafkaSkip', servers.kafkaSkip ?? '');
    project.provide('mongoUrl', servers.mongoUrl ?? '');
    project.provide('mongoSkip', servers.mongoSkip ?? '');
  } catch (err) {
    await (await production.catch(() => undefined))?.stop();
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw err;
  }
  return async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  };
}
