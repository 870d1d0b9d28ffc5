import type { Counter } from 'prom-client';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logging/logger.js';
import { backoffMs } from '../../shared/bus/retry.js';
import { WakeSignal } from '../../shared/runtime/wake-signal.js';

/** How long to wait when nothing is due (a retry's back-off may end meanwhile). */
const PENDING_POLL_MS = 200;

export interface DelivererOptions {
  pool: Pool;
  instance: string;
  maxAttempts: number;
  log: Logger;
  timeoutMs?: number;
  outcomes?: Counter<'instance' | 'outcome'>;
}

/**
 * Sends queued callback posts. The posts of one lane (one registration, or one history task) go in queue
 * order, one at a time, whatever URL each goes to, so a receiver sees events in block order; lanes proceed
 * independently. A failed post is retried with back-off up to `maxAttempts`, then marked failed and logged,
 * and the lane moves on.
 */
export class Deliverer {
  private readonly stopController = new AbortController();
  private running: Promise<void> | undefined;
  private readonly wakeSignal = new WakeSignal();

  constructor(private readonly options: DelivererOptions) {}

  start(): void {
    this.running = this.loop();
  }

  wake(): void {
    this.wakeSignal.wake();
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await this.running;
  }

  private async loop(): Promise<void> {
    const { pool, instance, log } = this.options;
    while (!this.stopController.signal.aborted) {
      this.wakeSignal.reset();
      try {
        const { rows } = await pool.query<{
          id: string;
          url: string;
          body: string;
          attempts: number;
          due: boolean;
        }>(
          `SELECT DISTINCT ON (lane) id, url, body, attempts, next_attempt_at <= now() AS due
           FROM chain_client_deliveries WHERE instance = $1 AND status = 'pending' ORDER BY lane, id`,
          [instance],
        );
        const due = rows.filter((r) => r.due);
        if (due.length > 0) {
          await Promise.all(due.map((r) => this.send(r)));
          continue;
        }
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'delivery loop failed; retrying');
      }
      await this.wakeSignal.sleep(PENDING_POLL_MS, this.stopController.signal);
    }
  }

  private async send(row: { id: string; url: string; body: string; attempts: number }): Promise<void> {
    const { pool, maxAttempts, log, outcomes, instance } = this.options;
    const attempt = row.attempts + 1;
    let error: string | undefined;
    try {
      const response = await fetch(row.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: row.body,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
      await response.arrayBuffer().catch(() => undefined);
      if (!response.ok) error = `HTTP ${response.status}`;
    } catch (err) {
      error = (err as Error).message;
    }
    if (error === undefined) {
      await pool.query(
        `UPDATE chain_client_deliveries SET status = 'delivered', attempts = $2, settled_at = now(), last_error = NULL WHERE id = $1`,
        [row.id, attempt],
      );
      outcomes?.inc({ instance, outcome: 'delivered' });
      return;
    }
    if (attempt >= maxAttempts) {
      await pool.query(
        `UPDATE chain_client_deliveries SET status = 'failed', attempts = $2, settled_at = now(), last_error = $3 WHERE id = $1`,
        [row.id, attempt, error],
      );
      outcomes?.inc({ instance, outcome: 'failed' });
      log.error(
        { url: row.url, delivery: row.id, attempts: attempt, err: error },
        'callback delivery given up',
      );
      return;
    }
    const delay = backoffMs(attempt, 200, 30_000);
    await pool.query(
      `UPDATE chain_client_deliveries SET attempts = $2, last_error = $3, next_attempt_at = now() + make_interval(secs => $4::float8 / 1000)
       WHERE id = $1`,
      [row.id, attempt, error, delay],
    );
    outcomes?.inc({ instance, outcome: 'retried' });
    log.warn(
      { url: row.url, delivery: row.id, attempt, retryInMs: delay, err: error },
      'callback delivery failed',
    );
  }
}
