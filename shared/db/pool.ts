import pg from 'pg';
import type { Logger } from '../logging/logger.js';
import { redactUrl } from '../config/redact.js';
import { PoolWatch, WatchedClient } from './pool-watch.js';
import { withDeadline } from '../runtime/deadline.js';

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
  // While the pool ends, one is a session the server ended before it read the client's goodbye (the server
  // stopping right after): expected, not worth a warning.
  pool.on('error', (err) =>
    options.log?.[pool.ending ? 'debug' : 'warn'](
      { err: err.message, db: redactUrl(url) },
      'idle database client error',
    ),
  );
  // pg's Pool.end resolves once it has asked its clients to end, not once they have: a caller that stops the
  // server next (the runner, the embedded PostgreSQL) would end their sessions itself. The end waits for them.
  const open = new Set<pg.Client>();
  const gone: Array<() => void> = [];
  pool.on('connect', (client) => open.add(client));
  pool.on('remove', (client) => {
    watch.removed(client);
    open.delete(client);
    if (open.size === 0) for (const resolve of gone.splice(0)) resolve();
  });
  const allGone = () =>
    open.size === 0
      ? Promise.resolve()
      : withDeadline(
          new Promise<void>((resolve) => gone.push(resolve)),
          CLIENTS_END_WAIT_MS,
          () => new Error('connections still closing'),
        ).catch(() => undefined);
  watches.set(pool, watch);
  const end = pool.end.bind(pool);
  pool.end = ((callback?: (err?: Error) => void) => {
    watch.stop();
    const ended = end().then(allGone);
    if (!callback) return ended;
    ended.then(() => callback(), callback);
    return undefined;
  }) as typeof pool.end;
  return pool;
}

/** The longest a pool's end waits for its connections to close (a connection dropped silently may never). */
const CLIENTS_END_WAIT_MS = 2_000;

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
