import type { Pool, PoolClient } from './pool.js';

/**
 * A PostgreSQL session advisory lock held on a connection of its own: one process at a time does the work it
 * guards, the others stand by and take it over within one try after the holder's session ends (a crash, a
 * stop, a lost connection: PostgreSQL frees the lock with the session).
 */
export class SessionLock {
  private client: PoolClient | undefined;
  private held = false;

  /** `name`: what is guarded, e.g. `otmoic:chain-client-deliverer:9006`. */
  constructor(
    private readonly pool: Pool,
    private readonly name: string,
  ) {}

  /** Whether this process holds the lock now, taking it when it is free. */
  async hold(): Promise<boolean> {
    // Asked once: held, the session keeps it until it ends (the connection's error event tells).
    if (this.held) return true;
    if (this.client === undefined) {
      const client = await this.pool.connect();
      client.on('error', () => {
        if (this.client === client) this.drop();
      });
      this.client = client;
    }
    try {
      const { rows } = await this.client.query<{ locked: boolean }>(
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

  /** Gives the lock up (the connection is closed: a session lock would outlive a release to the pool). */
  release(): void {
    this.drop();
  }

  private drop(): void {
    const client = this.client;
    this.client = undefined;
    this.held = false;
    client?.release(true);
  }
}
