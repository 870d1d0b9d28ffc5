import type { Pool, PoolClient } from '../../shared/db/pool.js';
import { withTransaction } from '../../shared/db/pool.js';
import type { PlannedDelivery, Registration, RegistrationKind } from './delivery-plan.js';

/** The chain client's persistent state: progress, registrations, and the delivery outbox. */
export class ChainClientStore {
  constructor(
    private readonly pool: Pool,
    readonly instance: string,
  ) {}

  async progress(): Promise<number | undefined> {
    const { rows } = await this.pool.query<{ last_block: string }>(
      'SELECT last_block FROM chain_client_progress WHERE instance = $1',
      [this.instance],
    );
    return rows[0] ? Number(rows[0].last_block) : undefined;
  }

  /** Returns false when the same callback is already registered (the original's harmless 30209). */
  async register(kind: RegistrationKind, callback: Record<string, string>, merge: boolean): Promise<boolean> {
    const result = await this.pool.query(
      `INSERT INTO chain_client_registrations (instance, kind, callback, merge) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING`,
      [this.instance, kind, JSON.stringify(callback), merge],
    );
    return result.rowCount === 1;
  }

  /**
   * Ours (the original has no such route): removes a registration and the posts still queued for it. Returns
   * false when no registration has this callback and merge.
   */
  async unregister(
    kind: RegistrationKind,
    callback: Record<string, string>,
    merge: boolean,
  ): Promise<boolean> {
    const { rows } = await this.pool.query<{ n: string }>(
      `WITH gone AS (
         DELETE FROM chain_client_registrations
         WHERE instance = $1 AND kind = $2 AND callback = $3::jsonb AND merge = $4 RETURNING id
       ), dropped AS (
         DELETE FROM chain_client_deliveries d USING gone
         WHERE d.instance = $1 AND d.lane = 'reg:' || gone.id AND d.status = 'pending' RETURNING 1
       )
       SELECT (SELECT count(*) FROM gone) AS n, (SELECT count(*) FROM dropped) AS dropped`,
      [this.instance, kind, JSON.stringify(callback), merge],
    );
    return Number(rows[0]!.n) > 0;
  }

  async registrations(): Promise<Registration[]> {
    const { rows } = await this.pool.query<Registration>(
      `SELECT 'reg:' || id AS lane, kind, callback, merge FROM chain_client_registrations WHERE instance = $1 ORDER BY id`,
      [this.instance],
    );
    return rows;
  }

  /**
   * Queues the deliveries of blocks (`expected`, `to`] and moves progress to `to`, atomically. A concurrent
   * writer (a second process on the same instance) makes this fail instead of queueing twice.
   */
  async commitRange(
    expected: number | undefined,
    to: number,
    deliveries: readonly PlannedDelivery[],
  ): Promise<void> {
    await withTransaction(this.pool, async (tx) => {
      await this.queue(tx, deliveries);
      const moved =
        expected === undefined
          ? await tx.query(
              `INSERT INTO chain_client_progress (instance, last_block) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
              [this.instance, to],
            )
          : await tx.query(
              `UPDATE chain_client_progress SET last_block = $2, updated_at = now() WHERE instance = $1 AND last_block = $3`,
              [this.instance, to, expected],
            );
      if (moved.rowCount !== 1)
        throw new Error(`chain client ${this.instance}: progress moved by someone else`);
    });
  }

  /** Queues deliveries that advance nothing (history replays). */
  async queueOnly(deliveries: readonly PlannedDelivery[]): Promise<void> {
    await withTransaction(this.pool, (tx) => this.queue(tx, deliveries));
  }

  private async queue(tx: PoolClient, deliveries: readonly PlannedDelivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    await tx.query(
      `INSERT INTO chain_client_deliveries (instance, lane, url, body)
       SELECT $1, l, u, b FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS t(l, u, b, i) ORDER BY i`,
      [
        this.instance,
        deliveries.map((d) => d.lane),
        deliveries.map((d) => d.url),
        deliveries.map((d) => d.body),
      ],
    );
  }
}
