/**
 * What every schemathesis launcher shares (test/support/schemathesis.sh runs them): a fresh database
 * (DATABASE_URL's server, else an embedded PostgreSQL in a temporary directory) with the service's migrations,
 * the service started by the launcher, then schemathesis (the CLI path is argv[2]) against the OpenAPI document
 * it serves. Exits non-zero on any 5xx or answer that does not match the document; cleans up either way.
 * A launcher may name values its service knows (a seeded bid, a registered DID name): schemathesis then uses
 * them for about half of that parameter's cases, so the fuzzing reaches the found answers, not only 404s.
 */
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../shared/db/embedded.js';
import { migrate, type MigrationSet } from '../../shared/db/migrate.js';
import { coreMigrations } from '../../shared/db/migrations/core.js';
import { createPool, type Pool } from '../../shared/db/pool.js';
import { freePort } from '../../shared/net/free-port.js';

export type Cleanup = () => Promise<unknown>;

export interface Served {
  base: string;
  openapiPath: string;
  /** Values the service knows, by parameter as schemathesis names them (`query.bid`). */
  known?: Record<string, readonly (string | number)[]>;
}

export interface SchemathesisTarget {
  /** Names the database and the temporary directory. */
  name: string;
  migrations: readonly MigrationSet[];
  /** Starts the service on the prepared database; `cleanups` run in reverse order at the end. */
  serve(db: { pool: Pool; url: string }, cleanups: Cleanup[]): Promise<Served>;
}

/**
 * A schemathesis.toml binding each known parameter to a dictionary of its values, drawn for half of the
 * parameter's cases (dictionaries, in the pinned 4.32.5); the other half stays generated.
 */
function knownValuesConfig(known: Record<string, readonly (string | number)[]>): string {
  const entries = Object.entries(known).filter(([, values]) => values.length > 0);
  const dictionary = (parameter: string) => `known-${parameter.replace(/[^A-Za-z0-9]+/g, '-')}`;
  const dictionaries = entries.map(
    ([parameter, values]) => `[dictionaries.${dictionary(parameter)}]\nvalues = ${JSON.stringify(values)}\n`,
  );
  const bindings = entries.map(
    ([parameter]) =>
      `${JSON.stringify(parameter)} = { dictionary = "${dictionary(parameter)}", probability = 0.5 }`,
  );
  return `${dictionaries.join('\n')}\n[parameters]\n${bindings.join('\n')}\n`;
}

/**
 * Seeds the service through its own API before the fuzzing: posts `body` as JSON and returns the answer's
 * `field` (an id to bind), or throws with the answer when the service refused it.
 */
export async function seedThroughApi(url: string, body: unknown, field: string): Promise<string> {
  const answer = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const accepted = (await answer.json()) as Record<string, unknown>;
  const value = accepted[field];
  if (answer.status !== 200 || typeof value !== 'string') {
    throw new Error(`the seeded ${url} was refused: ${answer.status} ${JSON.stringify(accepted)}`);
  }
  return value;
}

export async function runSchemathesis(target: SchemathesisTarget): Promise<never> {
  const st = process.argv[2];
  if (st === undefined) throw new Error(`usage: schemathesis-${target.name}.ts <path of the st CLI>`);
  const examples = process.env.SCHEMATHESIS_EXAMPLES ?? '25';
  const cleanups: Cleanup[] = [];
  let code = 1;
  try {
    let serverUrl = process.env.DATABASE_URL;
    if (serverUrl === undefined) {
      const dir = await mkdtemp(path.join(os.tmpdir(), `otmoic-schemathesis-${target.name}-pg-`));
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
    const admin = serverUrl;
    const name = `schemathesis_${target.name}_${process.pid}`;
    await adminQuery(admin, `CREATE DATABASE ${name}`);
    cleanups.push(() => adminQuery(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const pool = createPool(url.toString(), { max: 10 });
    cleanups.push(() => pool.end());
    await migrate(pool, [coreMigrations, ...target.migrations]);

    const { base, openapiPath, known } = await target.serve({ pool, url: url.toString() }, cleanups);
    const config: string[] = [];
    if (known !== undefined) {
      const dir = await mkdtemp(path.join(os.tmpdir(), `otmoic-schemathesis-${target.name}-config-`));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const file = path.join(dir, 'schemathesis.toml');
      await writeFile(file, knownValuesConfig(known));
      config.push('--config-file', file);
    }
    const args = [
      ...config,
      'run',
      `${base}${openapiPath}`,
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
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
