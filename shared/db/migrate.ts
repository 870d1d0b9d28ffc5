import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from '../logging/logger.js';

export interface Migration {
  /** Increasing within its namespace; never renumber a migration that has shipped. */
  version: number;
  name: string;
  sql: string;
}

export interface MigrationSet {
  /** Owner of the migrations ('core', 'relay', 'points', …). */
  namespace: string;
  migrations: readonly Migration[];
}

/**
 * Applies pending migrations, each in its own transaction, under an advisory lock so that several processes
 * starting together apply each migration once. Safe to re-run. A shipped migration whose text changed is an
 * error rather than silently skipped.
 */
export async function migrate(pool: pg.Pool, sets: readonly MigrationSet[], log?: Logger): Promise<number> {
  const client = await pool.connect();
  let applied = 0;
  try {
    await client.query(`SELECT pg_advisory_lock(hashtextextended('otmoic:migrations', 0))`);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      namespace text NOT NULL, version int NOT NULL, name text NOT NULL, checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (namespace, version))`);
    for (const set of sets) {
      const done = await client.query<{ version: number; checksum: string }>(
        'SELECT version, checksum FROM schema_migrations WHERE namespace = $1',
        [set.namespace],
      );
      const known = new Map(done.rows.map((r) => [r.version, r.checksum]));
      for (const m of [...set.migrations].sort((a, b) => a.version - b.version)) {
        const checksum = createHash('sha256').update(m.sql).digest('hex');
        const previous = known.get(m.version);
        if (previous !== undefined) {
          if (previous !== checksum) {
            throw new Error(
              `migration ${set.namespace}/${m.version} (${m.name}) changed after it was applied`,
            );
          }
          continue;
        }
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query(
            'INSERT INTO schema_migrations (namespace, version, name, checksum) VALUES ($1, $2, $3, $4)',
            [set.namespace, m.version, m.name, checksum],
          );
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw new Error(
            `migration ${set.namespace}/${m.version} (${m.name}) failed: ${(err as Error).message}`,
          );
        }
        applied++;
        log?.info({ namespace: set.namespace, version: m.version, name: m.name }, 'migration applied');
      }
    }
  } finally {
    await client
      .query(`SELECT pg_advisory_unlock(hashtextextended('otmoic:migrations', 0))`)
      .catch(() => undefined);
    client.release();
  }
  return applied;
}
