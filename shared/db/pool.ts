import pg from 'pg';
import type { Logger } from '../logging/logger.js';
import { redactUrl } from '../config/redact.js';
import { PoolWatch, WatchedClient } from './pool-watch.js';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that runs a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'>;

// int8 (bigint) columns come back as JS bigint-safe strings by default; offsets and heights are parsed by the
// code that reads them, never through floats.

export function createPool(
  url: string,
  options: {
    max?: number;
    log?: Logger;
    application?: string;
    /** The server cancels any statement of this pool's connections that runs longer (SQLSTATE 57014). */
    statementTimeoutMs?: number;
    /** How often the statements in flight are looked at (pool-watch.ts; POOL_WATCH_EVERY_MS by default). */
    watchEveryMs?: number;
    /** How long the server may take to answer the watch's look (tests shorten it). */
    watchProbeTimeoutMs?: number;
  } = {},
): pg.Pool {
  const watch = new PoolWatch({
    connectionString: url,
    everyMs: options.watchEveryMs,
    probeTimeoutMs: options.watchProbeTimeoutMs,
    log: options.log,
  });
  const pool = new pg.Pool({
    Client: WatchedClient,
    onConnect: (client) => watch.connected(client),
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.application ?? 'otmoic',
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    // Sent in the startup packet: no round trip per query.
    ...(options.statementTimeoutMs === undefined ? {} : { statement_timeout: options.statementTimeoutMs }),
  });
  // An idle client's error (server restart, network) must not crash the process; the next query reconnects.
  pool.on('error', (err) =>
    options.log?.warn({ err: err.message, db: redactUrl(url) }, 'idle database client error'),
  );
  pool.on('remove', (client) => watch.removed(client));
  watches.set(pool, watch);
  const end = pool.end.bind(pool);
  pool.end = ((callback?: () => void) => {
    watch.stop();
    return callback ? end(callback) : end();
  }) as typeof pool.end;
  return pool;
}

const watches = new WeakMap<pg.Pool, PoolWatch>();

/** Connections of `pool` (made by createPool) ended because their statement's answer would never come. */
export function lostConnections(pool: object): number | undefined {
  return watches.get(pool as pg.Pool)?.lost;
}

/**
 * Runs `fn` in a transaction on one client; commits on success, rolls back on any error. `begin`: the
 * statement that opens it (e.g. `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`).
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  const client = await pool.connect();
  // A checked-out client whose connection drops between two queries emits 'error' with no pool listener on
  // it: without this one that would crash the process. The next query on it fails and the caller sees that.
  const onError = () => undefined;
  client.on('error', onError);
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.off('error', onError);
    client.release();
  }
}
