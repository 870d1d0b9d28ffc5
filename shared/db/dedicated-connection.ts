/**
 * Connections held outside the pool for a process's life (a LISTEN, a session advisory lock, the bus's control
 * connection) can die silently: a NAT or firewall that forgets one sends neither an error nor an end. A query on
 * it then waits for ever, and the server keeps the session, with its advisory locks, until its own TCP keepalive
 * gives up, hours later. What such connections share is here: a query with a deadline that, once passed, ends
 * the connection by force; a heartbeat for the idle ones; an end that does not wait for a goodbye that never
 * comes; and ending the server session a lost connection left behind, so that its locks are free for the
 * connection that replaces it.
 */
import pg from 'pg';
import { withDeadline } from '../runtime/deadline.js';
import type { Queryable } from './pool.js';

/** How long a dedicated connection's `SELECT 1` (or other short statement) may take before it counts as lost. */
export const DEDICATED_QUERY_TIMEOUT_MS = 10_000;

/** A dedicated connection gave no answer in time: it was ended by force. */
export class ConnectionLostError extends Error {
  readonly code = 'CONNECTION_LOST';
}

/** The server session of a connection: its backend pid and start time (a pid alone may be reused). */
export interface ServerSession {
  pid: number;
  backendStart: string;
}

/** The statement that reads a connection's own server session (pid, backend_start). */
export const SESSION_QUERY = `SELECT pid, backend_start::text AS backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()`;

/** The server session of `client`'s connection. */
export async function sessionOf(client: Queryable): Promise<ServerSession> {
  const { rows } = await client.query<{ pid: number; backend_start: string }>(SESSION_QUERY);
  return { pid: rows[0]!.pid, backendStart: rows[0]!.backend_start };
}

/** How long endLostSession waits for the ended session to be gone (its locks freed). */
const END_SESSION_WAIT_MS = 5_000;

/**
 * Ends `session` on the server if it is still there: a session of this process whose connection was declared
 * lost and is no longer used, whose advisory locks would otherwise stay held until the server notices. Waits
 * until it is gone (PostgreSQL 14's pg_terminate_backend with a timeout), so its locks are free on return.
 * True when it was ended.
 */
export async function endLostSession(db: Queryable, session: ServerSession): Promise<boolean> {
  const { rows } = await db.query<{ ended: boolean }>(
    `SELECT pg_terminate_backend(pid, $3) AS ended FROM pg_stat_activity
      WHERE pid = $1 AND backend_start = $2::timestamptz AND pid <> pg_backend_pid()`,
    [session.pid, session.backendStart, END_SESSION_WAIT_MS],
  );
  return rows[0]?.ended === true;
}

/** Ends the connection's socket by force: its queries fail and the client emits 'end' (and 'error'). */
export function destroyConnection(client: pg.Client): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

/**
 * `client.query`, given up after `timeoutMs`: the connection is then ended by force (its 'end' handler runs, as
 * for any lost connection; `onLate` first, with the reason) and ConnectionLostError is thrown.
 */
export async function queryWithin<R extends pg.QueryResultRow = pg.QueryResultRow>(
  client: pg.Client,
  timeoutMs: number,
  text: string,
  values?: unknown[],
  onLate?: (reason: string) => void,
): Promise<pg.QueryResult<R>> {
  // The query is not waited for after the deadline: it fails once the connection is destroyed.
  return withDeadline(client.query<R>(text, values), timeoutMs, () => {
    const reason = `no answer from the database within ${timeoutMs} ms`;
    onLate?.(reason);
    destroyConnection(client);
    return new ConnectionLostError(reason);
  });
}

/** Ends the connection, or destroys it when the server's goodbye has not come within `timeoutMs`. */
export async function endWithin(client: pg.Client, timeoutMs: number): Promise<void> {
  const late = new ConnectionLostError(`no goodbye from the database within ${timeoutMs} ms`);
  try {
    await withDeadline(client.end(), timeoutMs, () => late);
  } catch (err) {
    if (err === late) destroyConnection(client);
  }
}

/**
 * Asks an otherwise idle connection (a LISTEN) `SELECT 1` every `everyMs`; one not answered within `timeoutMs`
 * ends it by force (its 'end' handler runs; `onLate` first, with the reason). Returns the function that stops
 * the heartbeat.
 */
export function startHeartbeat(
  client: pg.Client,
  options: { everyMs: number; timeoutMs: number; onLate?: (reason: string) => void },
): () => void {
  let beating = false;
  const timer = setInterval(() => {
    if (beating) return;
    beating = true;
    queryWithin(client, options.timeoutMs, 'SELECT 1', undefined, options.onLate)
      // A failure is the connection's: its 'error' or 'end' handler reports it.
      .catch(() => undefined)
      .finally(() => (beating = false));
  }, options.everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
