import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
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
