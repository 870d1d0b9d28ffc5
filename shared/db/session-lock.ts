import pg from 'pg';
import {
  ConnectionLostError,
  DEDICATED_QUERY_TIMEOUT_MS,
  endLostSession,
  endWithin,
  queryWithin,
  sessionOf,
  type ServerSession,
} from './dedicated-connection.js';
import type { Pool } from './pool.js';

/**
 * A PostgreSQL session advisory lock held on a connection of its own: one process at a time does the work it
 * guards, the others stand by and take it over within one try after the holder's session ends (a crash, a
 * stop, a lost connection: PostgreSQL frees the lock with the session). The connection is opened with the
 * pool's settings but outside it, so a lock held for the process's life takes none of the pool's connections.
 * A connection that stops answering is ended by this process, and so is its session on the server, from the
 * next connection (shared/db/dedicated-connection.ts): the lock is free again at once, not hours later.
 */
export class SessionLock {
  private client: pg.Client | undefined;
  /** The server session of the connection now open (known once it answered). */
  private session: ServerSession | undefined;
  /**
   * The session of a connection dropped without the server knowing (no answer in time): ended from the next
   * connection before the lock is asked for, or the server would keep it, and the lock, for hours.
   */
  private lostSession: ServerSession | undefined;
  private held = false;

  /**
   * `name`: what is guarded, e.g. `otmoic:chain-client-deliverer:9006`. `timeoutMs`: how long a statement on
   * the lock's connection may take before the connection counts as lost.
   */
  constructor(
    private readonly pool: Pool,
    private readonly name: string,
    private readonly timeoutMs = DEDICATED_QUERY_TIMEOUT_MS,
  ) {}

  /**
   * Whether this process holds the lock now, taking it when it is free. Every call asks the server: a
   * connection that died without an error event (a network partition) must not look held while another
   * process has taken the lock; a failed ask, or one not answered within the timeout, drops the connection
   * and throws (without the timeout, a connection a NAT forgot kept the holder waiting for ever).
   */
  async hold(): Promise<boolean> {
    let client = this.client;
    if (client === undefined) {
      const opened = new pg.Client({ ...this.pool.options, application_name: 'otmoic-lock' });
      const lost = () => {
        if (this.client === opened) this.drop();
      };
      opened.on('error', lost);
      opened.on('end', lost);
      this.client = client = opened;
      try {
        await opened.connect();
        this.session = await sessionOf(opened);
        if (this.lostSession) {
          await endLostSession(opened, this.lostSession);
          this.lostSession = undefined;
        }
      } catch (err) {
        this.drop();
        throw err;
      }
    }
    try {
      // Held: only whether the session is alive (taking it again would stack the lock once per call).
      if (this.held) {
        await queryWithin(client, this.timeoutMs, 'SELECT 1');
        return true;
      }
      const { rows } = await queryWithin<{ locked: boolean }>(
        client,
        this.timeoutMs,
        'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked',
        [this.name],
      );
      this.held = rows[0]!.locked;
      return this.held;
    } catch (err) {
      if (err instanceof ConnectionLostError) this.lostSession = this.session;
      this.drop();
      throw err;
    }
  }

  /** Gives the lock up, at once for a standby (the server frees a closed session's locks a little later). */
  async release(): Promise<void> {
    const client = this.client;
    if (this.held && client)
      await queryWithin(client, this.timeoutMs, 'SELECT pg_advisory_unlock_all()').catch(() => undefined);
    this.drop();
  }

  private drop(): void {
    const client = this.client;
    this.client = undefined;
    this.session = undefined;
    this.held = false;
    if (client) void endWithin(client, this.timeoutMs);
  }
}
