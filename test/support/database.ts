import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { createPool, type Pool } from '../../shared/db/pool.js';
import { migrate, type MigrationSet } from '../../shared/db/migrate.js';
import { coreMigrations } from '../../shared/db/migrations/core.js';

export interface TestDatabase {
  url: string;
  pool: Pool;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/** A fresh database on the run's server, with the core migrations (and any others given) applied. */
export async function createTestDatabase(extra: readonly MigrationSet[] = []): Promise<TestDatabase> {
  const serverUrl = inject('databaseUrl');
  const name = `t_${randomBytes(6).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${name}`);
  const url = withDatabase(serverUrl, name);
  const pool = createPool(url, { max: 20 });
  await migrate(pool, [coreMigrations, ...extra]);
  return {
    url,
    pool,
    async drop() {
      await pool.end();
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/**
 * A fresh database (createTestDatabase) for the tests of the enclosing describe: created before them, dropped
 * after them. Its members are there from the suite's first hook on.
 */
export function databaseForSuite(extra: readonly MigrationSet[] = []): TestDatabase {
  let db: TestDatabase | undefined;
  beforeAll(async () => {
    db = await createTestDatabase(extra);
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });
  const current = (): TestDatabase => {
    if (db === undefined)
      throw new Error('the suite database is created in beforeAll: use it in a test or hook');
    return db;
  };
  return {
    get url() {
      return current().url;
    },
    get pool() {
      return current().pool;
    },
    drop: () => current().drop(),
  };
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
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
