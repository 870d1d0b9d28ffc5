import type { Pool, PoolClient } from '../../shared/db/pool.js';
import { withTransaction } from '../../shared/db/pool.js';
import type { PlannedDelivery, Registration, RegistrationKind } from './delivery-plan.js';

/** A history request in progress: its blocks from `next` to `end` are still to be queued. */
export interface HistoryTask {
  id: string;
  registration: Registration;
  start: number;
  next: number;
  end: number;
  /** Failed reads of the range from `next` in a row. */
  failures: number;
}

/** What a history request became: a new task, the same request's task that runs already, or nothing. */
export type HistoryRequestOutcome = { outcome: 'started' | 'running'; id: string } | { outcome: 'full' };

/** The chain client's persistent state: progress, registrations, history tasks and the delivery outbox. */
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

  /**
   * 'exists' when the same callback is already registered (the original's harmless 30209); 'full' when the
   * instance holds `limit` registrations already (each costs a post per chunk for ever: anyone allowed to
   * register could otherwise add them without end).
   */
  async register(
    kind: RegistrationKind,
    callback: Record<string, string>,
    merge: boolean,
    limit: number,
  ): Promise<'created' | 'exists' | 'full'> {
    const values = [this.instance, kind, JSON.stringify(callback), merge];
    // Two statements: an unregister of the same callback may land between them. The INSERT then met the row
    // and the second finds neither it nor a full instance: the register is tried again (once the unregister
    // committed, its INSERT goes in), instead of answering "full".
    for (let attempt = 1; ; attempt++) {
      const result = await this.pool.query(
        `INSERT INTO chain_client_registrations (instance, kind, callback, merge)
         SELECT $1, $2, $3, $4 WHERE (SELECT count(*) FROM chain_client_registrations WHERE instance = $1) < $5
         ON CONFLICT DO NOTHING`,
        [...values, limit],
      );
      if (result.rowCount === 1) return 'created';
      const { rows } = await this.pool.query<{ registered: boolean; held: string }>(
        `SELECT EXISTS (SELECT 1 FROM chain_client_registrations
                         WHERE instance = $1 AND kind = $2 AND callback = $3 AND merge = $4) AS registered,
                (SELECT count(*) FROM chain_client_registrations WHERE instance = $1) AS held`,
        values,
      );
      if (rows[0]!.registered) return 'exists';
      if (Number(rows[0]!.held) >= limit || attempt === 3) return 'full';
    }
  }

  /**
   * Ours (the original has no such route): removes a registration and the posts still queued for it. Returns
   * false when no registration has this callback and merge. It waits for a step committing meanwhile (the
   * progress row's lock, which commitRange takes first), so that step's posts for it are removed too.
   */
  async unregister(
    kind: RegistrationKind,
    callback: Record<string, string>,
    merge: boolean,
  ): Promise<boolean> {
    return withTransaction(this.pool, async (tx) => {
      await tx.query('SELECT 1 FROM chain_client_progress WHERE instance = $1 FOR UPDATE', [this.instance]);
      const { rows } = await tx.query<{ n: string }>(
        `WITH gone AS (
           DELETE FROM chain_client_registrations
           WHERE instance = $1 AND kind = $2 AND callback = $3::jsonb AND merge = $4 RETURNING id
         ), dropped AS (
           DELETE FROM chain_client_deliveries d USING gone
           WHERE d.instance = $1 AND d.lane = 'reg:' || gone.id AND d.status = 'pending' RETURNING 1
         )
         SELECT (SELECT count(*) FROM gone) AS n`,
        [this.instance, kind, JSON.stringify(callback), merge],
      );
      return Number(rows[0]!.n) > 0;
    });
  }

  /**
   * Removes every reputation registration and history task of the instance with the posts still queued for
   * them: an instance without a reputation contract reads no complaint logs, and their heartbeats would tell
   * the receiver that none happened (kept from before such an instance refused them). Returns how many of each.
   */
  async dropReputation(): Promise<{ registrations: number; historyTasks: number }> {
    return withTransaction(this.pool, async (tx) => {
      // The progress row's lock: a step committing meanwhile has queued its posts before these are removed.
      await tx.query('SELECT 1 FROM chain_client_progress WHERE instance = $1 FOR UPDATE', [this.instance]);
      const { rows } = await tx.query<{ registrations: string; tasks: string }>(
        `WITH regs AS (
           DELETE FROM chain_client_registrations WHERE instance = $1 AND kind = 'reputation'
           RETURNING 'reg:' || id AS lane
         ), tasks AS (
           DELETE FROM chain_client_history_tasks WHERE instance = $1 AND kind = 'reputation'
           RETURNING lane, state
         ), dropped AS (
           DELETE FROM chain_client_deliveries
            WHERE instance = $1 AND status = 'pending'
              AND lane IN (SELECT lane FROM regs UNION ALL SELECT lane FROM tasks)
           RETURNING 1
         )
         SELECT (SELECT count(*) FROM regs) AS registrations,
                (SELECT count(*) FROM tasks WHERE state = 'running') AS tasks`,
        [this.instance],
      );
      return { registrations: Number(rows[0]!.registrations), historyTasks: Number(rows[0]!.tasks) };
    });
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
   * writer (a second process on the same instance) makes this fail instead of queueing twice. Progress moves
   * first: its row's lock orders this against an unregister (see unregister).
   */
  async commitRange(
    expected: number | undefined,
    to: number,
    deliveries: readonly PlannedDelivery[],
  ): Promise<void> {
    await withTransaction(this.pool, async (tx) => {
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
      await this.queue(tx, deliveries);
    });
  }

  /**
   * A history request, kept until its last range is queued (Follower.historyStep) and its posts are out.
   * 'running' when the same request (kind, callback, merge, start, end) has a task that runs: a client retrying
   * after a lost answer must not get every chunk twice. 'full' when `limit` tasks of the instance are reading
   * already (each reads its range through the RPC).
   */
  async addHistoryTask(
    task: Registration & { start: number; end: number },
    limit: number,
  ): Promise<HistoryRequestOutcome> {
    return withTransaction(this.pool, async (tx) => {
      // One request of the instance at a time: two identical ones at once must not both start a task.
      await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
        `otmoic:chain-client-history:${this.instance}`,
      ]);
      // Tasks whose ranges are all queued and whose posts are out (delivered or given up) are done.
      await tx.query(
        `DELETE FROM chain_client_history_tasks t
          WHERE t.instance = $1 AND t.state = 'queued'
            AND NOT EXISTS (SELECT 1 FROM chain_client_deliveries d
                             WHERE d.instance = $1 AND d.lane = t.lane AND d.status = 'pending')`,
        [this.instance],
      );
      const request = [
        this.instance,
        task.kind,
        JSON.stringify(task.callback),
        task.merge,
        task.start,
        task.end,
      ];
      const same = await tx.query<{ id: string }>(
        `SELECT id FROM chain_client_history_tasks
          WHERE instance = $1 AND kind = $2 AND callback = $3::jsonb AND merge = $4 AND start_block = $5
            AND end_block = $6
          ORDER BY id LIMIT 1`,
        request,
      );
      if (same.rows[0]) return { outcome: 'running', id: same.rows[0].id };
      const added = await tx.query<{ id: string }>(
        `INSERT INTO chain_client_history_tasks
           (instance, kind, callback, merge, start_block, end_block, next_block, lane)
         SELECT $1, $2, $3, $4, $5, $6, $5, $7
          WHERE (SELECT count(*) FROM chain_client_history_tasks WHERE instance = $1 AND state = 'running') < $8
         RETURNING id`,
        [...request, task.lane, limit],
      );
      return added.rows[0] ? { outcome: 'started', id: added.rows[0].id } : { outcome: 'full' };
    });
  }

  async historyTasks(): Promise<HistoryTask[]> {
    const { rows } = await this.pool.query<{
      id: string;
      lane: string;
      kind: Registration['kind'];
      callback: Record<string, string>;
      merge: boolean;
      start_block: string;
      next_block: string;
      end_block: string;
      failures: number;
    }>(
      `SELECT id, lane, kind, callback, merge, start_block, next_block, end_block, failures
         FROM chain_client_history_tasks
        WHERE instance = $1 AND state = 'running' AND retry_at <= now() ORDER BY id`,
      [this.instance],
    );
    return rows.map((r) => ({
      id: r.id,
      registration: { lane: r.lane, kind: r.kind, callback: r.callback, merge: r.merge },
      start: Number(r.start_block),
      next: Number(r.next_block),
      end: Number(r.end_block),
      failures: r.failures,
    }));
  }

  /** A failed read of the task's next range: read again after `retryInMs`. */
  async historyRangeFailed(task: HistoryTask, retryInMs: number, error: string): Promise<void> {
    await this.pool.query(
      `UPDATE chain_client_history_tasks
          SET failures = failures + 1, last_error = $3, retry_at = now() + make_interval(secs => $4::float8 / 1000)
        WHERE id = $1 AND next_block = $2`,
      [task.id, task.next, error, retryInMs],
    );
  }

  /** Gives a task up (its range cannot be read): its slot is free, the posts already queued still go out. */
  async dropHistoryTask(task: HistoryTask): Promise<void> {
    await this.pool.query('DELETE FROM chain_client_history_tasks WHERE id = $1 AND next_block = $2', [
      task.id,
      task.next,
    ]);
  }

  /**
   * Queues one range of a history task and moves it on to `next` (past its end: 'queued', kept until its posts
   * are out, see addHistoryTask), atomically: a task is never queued twice for a range, whatever fails between.
   */
  async commitHistoryRange(
    task: HistoryTask,
    next: number,
    deliveries: readonly PlannedDelivery[],
  ): Promise<void> {
    await withTransaction(this.pool, async (tx) => {
      await this.queue(tx, deliveries);
      const moved = await tx.query(
        `UPDATE chain_client_history_tasks
            SET next_block = $3, failures = 0, last_error = NULL,
                state = CASE WHEN $3 > end_block THEN 'queued' ELSE 'running' END
          WHERE id = $1 AND next_block = $2 AND state = 'running'`,
        [task.id, task.next, next],
      );
      if (moved.rowCount !== 1) throw new Error(`history task ${task.id} moved by someone else`);
    });
  }

  private async queue(tx: PoolClient, deliveries: readonly PlannedDelivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    // A registration's posts only while it exists: one removed after the step read the registrations gets none.
    await tx.query(
      `INSERT INTO chain_client_deliveries (instance, lane, url, body)
       SELECT $1, l, u, b FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS t(l, u, b, i)
        WHERE l NOT LIKE 'reg:%'
           OR EXISTS (SELECT 1 FROM chain_client_registrations r WHERE r.instance = $1 AND 'reg:' || r.id = l)
        ORDER BY i`,
      [
        this.instance,
        deliveries.map((d) => d.lane),
        deliveries.map((d) => d.url),
        deliveries.map((d) => d.body),
      ],
    );
  }
}
