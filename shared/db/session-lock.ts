import pg from 'pg';
import type { Pool } from './pool.js';

/**
 * A PostgreSQL session advisory lock held on a connection of its own: one process at a time does the work it
 * guards, the others stand by and take it over within one try after the holder's session ends (a crash, a
 * stop, a lost connection: PostgreSQL frees the lock with the session). The connection is opened with the
 * pool's settings but outside it, so a lock held for the process's life takes none of the pool's connections.
 */
export class SessionLock {
  private client: pg.Client | undefined;
  private held = false;

  /** `name`: what is guarded, e.g. `otmoic:chain-client-deliverer:9006`. */
  constructor(
    private readonly pool: Pool,
    private readonly name: string,
  ) {}

  /**
   * Whether this process holds the lock now, taking it when it is free. Every call asks the server: a
   * connection that died without an error event (a network partition) must not look held while another
   * process has taken the lock; a failed ask drops the connection and throws.
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
      } catch (err) {
        this.drop();
        throw err;
      }
    }
    try {
      // Held: only whether the session is alive (taking it again would stack the lock once per call).
      if (this.held) {
        await client.query('SELECT 1');
        return true;
      }
      const { rows } = await client.query<{ locked: boolean }>(
        'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked',
        [this.name],
      );
      this.held = rows[0]!.locked;
      return this.held;
    } catch (err) {
      this.drop();
      throw err;
    }
  }

  /** Gives the lock up, at once for a standby (the server frees a closed session's locks a little later). */
  async release(): Promise<void> {
    if (this.held) await this.client?.query('SELECT pg_advisory_unlock_all()').catch(() => undefined);
    this.drop();
  }

  private drop(): void {
    const client = this.client;
    this.client = undefined;
    this.held = false;
    client?.end().catch(() => undefined);
  }
}
