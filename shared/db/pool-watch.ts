/**
 * Pooled connections dropped silently. A NAT, a firewall or a failover that forgets a connection tells neither
 * side: a statement on it waits until TCP gives up retransmitting (about 15 minutes on Linux), and its server
 * session keeps the transaction's row locks until the server's own keepalive notices, hours later. A client
 * deadline cannot tell such a statement from a long one, so the server is asked instead: a statement still
 * unanswered after `everyMs` has its session looked up from a new connection. A session that is not running a
 * statement (or is gone) at two looks in a row, or a server that cannot be asked twice in a row, means the
 * answer will never come: the connection is ended by force (the statement fails as on any lost connection,
 * and the pool drops the client) and the session, if still there, is ended so that its locks are freed.
 */
import pg from 'pg';
import type { Logger } from '../logging/logger.js';
import { redactUrl } from '../config/redact.js';
import { withDeadline } from '../runtime/deadline.js';
import {
  ConnectionLostError,
  DEDICATED_QUERY_TIMEOUT_MS,
  destroyConnection,
  endLostSession,
  endWithin,
  queryWithin,
  SESSION_QUERY,
  type ServerSession,
} from './dedicated-connection.js';

/** How often statements in flight are looked at; one unanswered for longer has its session looked up. */
export const POOL_WATCH_EVERY_MS = 10_000;

/** A statement sent on a pooled connection and not answered yet. */
interface InFlight {
  since: number;
}

/** A pg client that knows its statements in flight (those of the pool's own `query` too: they pass here). */
export class WatchedClient extends pg.Client {
  readonly inFlight = new Set<InFlight>();
  /** Its server session, once read (right after connecting, before any caller's statement). */
  session: ServerSession | undefined;

  /** When the oldest statement still in flight was sent, if one is. */
  oldest(): InFlight | undefined {
    return this.inFlight.values().next().value;
  }
}

// pg's query has many shapes (promise, callback, config object with callback, submittable), which one
// TypeScript override cannot restate: each that answers through a callback or a promise is tracked, the
// callback wrapped so that nothing else changes.
// pg.Client's own query is looked up at each call (a test's statement counter replaces it).
const query = (client: pg.Client, args: unknown[]) =>
  (pg.Client.prototype.query as (...a: unknown[]) => unknown).apply(client, args);
WatchedClient.prototype.query = function (this: WatchedClient, ...args: unknown[]) {
  const entry: InFlight = { since: performance.now() };
  const done = () => this.inFlight.delete(entry);
  const last = args.length - 1;
  if (typeof args[last] === 'function') {
    const callback = args[last] as (...answer: unknown[]) => void;
    args[last] = (...answer: unknown[]) => {
      done();
      callback(...answer);
    };
    this.inFlight.add(entry);
    return query(this, args);
  }
  const result = query(this, args);
  if (result instanceof Promise) {
    this.inFlight.add(entry);
    // A branch of its own: the caller's promise is still theirs to handle (an unhandled one stays reported).
    result.then(done, done);
  }
  return result;
} as typeof pg.Client.prototype.query;

export interface PoolWatchOptions {
  connectionString: string;
  everyMs?: number;
  /** How long the server may take to answer a look (DEDICATED_QUERY_TIMEOUT_MS by default). */
  probeTimeoutMs?: number;
  log?: Logger;
}

/** What a look at a statement in flight found, kept until the next look. */
interface Suspect {
  statement: InFlight;
}

/**
 * Watches the clients of a pool made with `Client: WatchedClient`, whose `onConnect` is connected() and whose
 * 'remove' event calls removed() (createPool wires them), until stop().
 */
export class PoolWatch {
  private readonly clients = new Set<WatchedClient>();
  private readonly suspects = new WeakMap<WatchedClient, Suspect>();
  private readonly timer: NodeJS.Timeout;
  private looking = false;
  /** Connections ended because their statement's answer would never come. */
  lost = 0;

  constructor(private readonly options: PoolWatchOptions) {
    this.timer = setInterval(() => void this.look(), options.everyMs ?? POOL_WATCH_EVERY_MS);
    this.timer.unref();
  }

  /**
   * The pool's `onConnect`: reads the new connection's server session before the pool hands it out (within a
   * deadline: a connection that does not answer is dropped, and the caller's connect fails), and watches it.
   */
  async connected(client: pg.ClientBase): Promise<void> {
    const watched = client as unknown as WatchedClient;
    const { rows } = await queryWithin<{ pid: number; backend_start: string }>(
      watched,
      this.options.probeTimeoutMs ?? DEDICATED_QUERY_TIMEOUT_MS,
      SESSION_QUERY,
    );
    watched.session = { pid: rows[0]!.pid, backendStart: rows[0]!.backend_start };
    this.clients.add(watched);
    watched.once('end', () => this.clients.delete(watched));
  }

  /** The pool's 'remove' event: a client it let go. */
  removed(client: pg.ClientBase): void {
    this.clients.delete(client as unknown as WatchedClient);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One look at the statements in flight for longer than everyMs. */
  async look(): Promise<void> {
    if (this.looking) return;
    this.looking = true;
    try {
      const everyMs = this.options.everyMs ?? POOL_WATCH_EVERY_MS;
      const now = performance.now();
      const overdue = [...this.clients].filter((c) => {
        const oldest = c.oldest();
        if (oldest === undefined || now - oldest.since < everyMs) {
          this.suspects.delete(c);
          return false;
        }
        return true;
      });
      if (overdue.length === 0) return;
      const sessions = await this.serverSessions(overdue);
      for (const client of overdue) {
        const statement = client.oldest();
        // Answered while the server was asked.
        if (statement === undefined) continue;
        const session = client.session;
        const seen = session && sessions?.get(session.pid);
        const running = seen !== undefined && seen.backendStart === session!.backendStart && seen.running;
        if (running) {
          this.suspects.delete(client);
          continue;
        }
        const suspect = this.suspects.get(client);
        if (suspect?.statement !== statement) {
          this.suspects.set(client, { statement });
          continue;
        }
        const reason =
          sessions === undefined
            ? 'the database could not be asked about its session twice in a row'
            : seen === undefined || seen.backendStart !== session!.backendStart
              ? 'its server session is gone'
              : `its server session is ${seen.state}, not running it`;
        await this.end(client, statement, reason, seen === undefined ? undefined : session);
      }
    } finally {
      this.looking = false;
    }
  }

  /** Per pid, the server's view of the clients' sessions; undefined when the server could not be asked. */
  private async serverSessions(
    clients: readonly WatchedClient[],
  ): Promise<Map<number, { backendStart: string; state: string; running: boolean }> | undefined> {
    const pids = clients.flatMap((c) => (c.session ? [c.session.pid] : []));
    try {
      const { rows } = await this.onNewConnection(0, (probe) =>
        probe.query<{ pid: number; backend_start: string; state: string | null }>(
          `SELECT pid, backend_start::text AS backend_start, state FROM pg_stat_activity WHERE pid = ANY($1)`,
          [pids],
        ),
      );
      return new Map(
        rows.map((r) => [
          r.pid,
          {
            backendStart: r.backend_start,
            state: r.state ?? 'unknown',
            // 'fastpath function call' is a statement running too.
            running: r.state === 'active' || r.state === 'fastpath function call',
          },
        ]),
      );
    } catch (err) {
      this.options.log?.warn(
        { err: (err as Error).message, db: redactUrl(this.options.connectionString) },
        'pool watch: the database could not be asked about statements in flight',
      );
      return undefined;
    }
  }

  /**
   * `work` on a connection of its own, made for it (the pool's may all be stuck), within the look's deadline
   * and `extraMs`; the connection is closed after.
   */
  private async onNewConnection<T>(extraMs: number, work: (probe: pg.Client) => Promise<T>): Promise<T> {
    const probe = new pg.Client({
      connectionString: this.options.connectionString,
      application_name: 'otmoic-pool-watch',
    });
    probe.on('error', () => undefined);
    const timeoutMs = (this.options.probeTimeoutMs ?? DEDICATED_QUERY_TIMEOUT_MS) + extraMs;
    try {
      return await withDeadline(
        probe.connect().then(() => work(probe)),
        timeoutMs,
        () => new ConnectionLostError(`no answer from the database within ${timeoutMs} ms`),
      );
    } finally {
      await endWithin(probe, 1_000);
    }
  }

  /**
   * Ends `client`'s server session if it is still there, then its connection by force: the statement fails once
   * the session's locks are free, so a caller that tries again at once does not wait for them.
   */
  private async end(
    client: WatchedClient,
    statement: InFlight,
    reason: string,
    session: ServerSession | undefined,
  ): Promise<void> {
    this.lost++;
    this.suspects.delete(client);
    this.options.log?.error(
      {
        pid: client.session?.pid,
        waitedMs: Math.round(performance.now() - statement.since),
        reason,
        db: redactUrl(this.options.connectionString),
      },
      'a pooled connection will never answer its statement: ended by force (the statement fails)',
    );
    if (session !== undefined) await this.endSession(session);
    destroyConnection(client);
  }

  private async endSession(session: ServerSession): Promise<void> {
    try {
      // endLostSession waits up to 5 s for the session to be gone.
      await this.onNewConnection(5_000, (probe) => endLostSession(probe, session));
    } catch (err) {
      this.options.log?.warn(
        { err: (err as Error).message, pid: session.pid },
        'pool watch: the lost connection’s server session could not be ended (its locks stay until the server notices)',
      );
    }
  }
}
