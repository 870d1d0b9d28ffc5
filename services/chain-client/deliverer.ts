import type { Counter } from 'prom-client';
import type { Pool } from '../../shared/db/pool.js';
import { SessionLock } from '../../shared/db/session-lock.js';
import { urlOrigin } from '../../shared/config/redact.js';
import type { Logger } from '../../shared/logging/logger.js';
import { backoffMs } from '../../shared/bus/retry.js';
import { outboundSignal } from '../../shared/runtime/deadline.js';
import { WakeSignal } from '../../shared/runtime/wake-signal.js';

/** How long to wait when nothing is due (a retry's back-off may end meanwhile). */
const PENDING_POLL_MS = 200;
/** How often a process standing by tries to take the instance's deliveries over. */
const STANDBY_POLL_MS = 2_000;
/** How often settled posts older than keepSettledDays are removed. */
const PRUNE_EVERY_MS = 3_600_000;
/** The longest wait between two attempts, whatever the attempt count. */
const MAX_RETRY_DELAY_MS = 3_600_000;

export interface DelivererOptions {
  pool: Pool;
  instance: string;
  maxAttempts: number;
  log: Logger;
  timeoutMs?: number;
  /** Wait after the first failed attempt, doubling after each (default 1 s, as the original). */
  retryBaseMs?: number;
  /** Days delivered and given-up posts are kept (default 7). */
  keepSettledDays?: number;
  outcomes?: Counter<'instance' | 'outcome'>;
  /**
   * The process stops (ServiceContext.stopSignal): a post in flight is aborted, and its row stays as it was
   * (no attempt counted); it is posted again after the restart.
   */
  stopSignal?: AbortSignal;
}

/**
 * Sends queued callback posts. The posts of one lane (one registration, or one history task) go in queue
 * order, one at a time, whatever URL each goes to, so a receiver sees events in block order. Lanes proceed
 * independently: a receiver that hangs or is down holds up its own lane only. A failed post is retried 1 s
 * later, then 2, 4, … (the original's schedule: 11 attempts span about 17 minutes) up to `maxAttempts`, then
 * marked failed and logged, and the lane moves on; one the receiver refuses (4xx, not 408 / 429) at once.
 * Settled posts are removed after `keepSettledDays`. One process per instance sends (a session lock): a second
 * one on the same instance (two replicas, a restart overlapping the old process) stands by, since both would
 * send every post, and an older height after a newer one.
 */
export class Deliverer {
  private readonly stopController = new AbortController();
  private running: Promise<void> | undefined;
  private readonly wakeSignal = new WakeSignal();
  /** Lanes with a post on the way. */
  private readonly sending = new Map<string, Promise<void>>();
  /**
   * When each lane's last post settled, on a counter the loop also reads before each query: a query that
   * started before a post settled still shows that post pending, and must not send it again.
   */
  private readonly settledAt = new Map<string, number>();
  private clock = 0;
  private prunedAtMs = 0;
  private readonly lock: SessionLock;
  private standingBy = false;

  constructor(private readonly options: DelivererOptions) {
    this.lock = new SessionLock(options.pool, `otmoic:chain-client-deliverer:${options.instance}`);
  }

  start(): void {
    this.running = this.loop();
  }

  wake(): void {
    this.wakeSignal.wake();
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await this.running;
    await Promise.all(this.sending.values());
    await this.lock.release();
  }

  private async loop(): Promise<void> {
    const { pool, instance, log } = this.options;
    while (!this.stopController.signal.aborted) {
      this.wakeSignal.reset();
      try {
        if (!(await this.lock.hold())) {
          if (!this.standingBy) log.info('another process sends the posts of this instance; standing by');
          this.standingBy = true;
          await this.wakeSignal.sleep(STANDBY_POLL_MS, this.stopController.signal);
          continue;
        }
        if (this.standingBy) log.info('this process sends the posts of this instance now');
        this.standingBy = false;
        await this.pruneNowAndThen();
        const asOf = ++this.clock;
        const { rows } = await pool.query<{
          id: string;
          lane: string;
          url: string;
          body: string;
          attempts: number;
          due: boolean;
        }>(
          `SELECT DISTINCT ON (lane) id, lane, url, body, attempts, next_attempt_at <= now() AS due
           FROM chain_client_deliveries WHERE instance = $1 AND status = 'pending' ORDER BY lane, id`,
          [instance],
        );
        for (const row of rows) {
          const stale = (this.settledAt.get(row.lane) ?? 0) > asOf;
          if (!row.due || stale || this.sending.has(row.lane)) continue;
          const sent = this.send(row)
            .catch((err) => log.warn({ err: (err as Error).message, lane: row.lane }, 'delivery step failed'))
            .finally(() => {
              this.settledAt.set(row.lane, ++this.clock);
              this.sending.delete(row.lane);
              this.wakeSignal.wake();
            });
          this.sending.set(row.lane, sent);
        }
        // Settlements before this query are in its rows: the next query needs only later ones.
        for (const [lane, at] of this.settledAt) if (at < asOf) this.settledAt.delete(lane);
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'delivery loop failed; retrying');
      }
      // Woken by a post settling (its lane's next one may be due), new work, or the poll.
      await this.wakeSignal.sleep(PENDING_POLL_MS, this.stopController.signal);
    }
  }

  private async pruneNowAndThen(): Promise<void> {
    if (Date.now() - this.prunedAtMs < PRUNE_EVERY_MS) return;
    this.prunedAtMs = Date.now();
    const { rowCount } = await this.options.pool.query(
      `DELETE FROM chain_client_deliveries
       WHERE instance = $1 AND status IN ('delivered', 'failed') AND settled_at < now() - make_interval(days => $2)`,
      [this.options.instance, this.options.keepSettledDays ?? 7],
    );
    if (rowCount) this.options.log.info({ removed: rowCount }, 'settled callback posts removed');
  }

  private async send(row: { id: string; url: string; body: string; attempts: number }): Promise<void> {
    const { pool, maxAttempts, log, outcomes, instance } = this.options;
    const attempt = row.attempts + 1;
    let error: string | undefined;
    // A refusal of the body itself (a redirect, or a 4xx but 408 and 429, which are about the receiver's
    // state) comes again on every retry: retrying would hold the lane up for nothing.
    let refused = false;
    try {
      const response = await fetch(row.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: row.body,
        signal: outboundSignal(this.options.timeoutMs ?? 10_000, this.options.stopSignal),
        // Not followed: a 301/302 would turn the post into a bodyless GET whose 2xx counts as delivered, and
        // a registered URL could send the chain client's posts anywhere. The same redirect comes every time.
        redirect: 'manual',
      });
      // Not read: the status is the answer, and a receiver streaming a huge body would fill the memory.
      await response.body?.cancel().catch(() => undefined);
      if (!response.ok) {
        error = `HTTP ${response.status}`;
        refused =
          response.status >= 300 &&
          response.status < 500 &&
          response.status !== 408 &&
          response.status !== 429;
      }
    } catch (err) {
      // fetch's errors may quote the URL, whose path, query or user:password can be a receiver's secret: the
      // log and last_error name its origin only, as everything else here does.
      error = withoutUrl((err as Error).message, row.url);
      // Cut off by the stop, not failed by the receiver: the row is left as it was.
      if (this.options.stopSignal?.aborted) return;
    }
    if (error === undefined) {
      await pool.query(
        `UPDATE chain_client_deliveries SET status = 'delivered', attempts = $2, settled_at = now(), last_error = NULL WHERE id = $1`,
        [row.id, attempt],
      );
      outcomes?.inc({ instance, outcome: 'delivered' });
      return;
    }
    if (refused || attempt >= maxAttempts) {
      // A single event given up (a registration or history without merge): the data-less update_height of
      // its chunk, next in the lane, would tell the receiver the chunk is complete, and it would move its
      // height past an event it never got, for good. That height is not sent either: the receiver sees the
      // chunk missing at the next height and asks for its blocks again (a gap), as after a lost merged chunk.
      const { rows: withheld } = await pool.query<{ id: string }>(
        `WITH failed AS (
           UPDATE chain_client_deliveries SET status = 'failed', attempts = $2, settled_at = now(), last_error = $3
            WHERE id = $1 RETURNING lane, body
         ), chunk_height AS (
           SELECT d.id FROM chain_client_deliveries d, failed f
            WHERE f.body NOT LIKE '{"type":"update_height"%'
              AND d.instance = $4 AND d.lane = f.lane AND d.status = 'pending' AND d.id > $1
              AND d.body LIKE '{"type":"update_height"%'
            ORDER BY d.id LIMIT 1
         )
         UPDATE chain_client_deliveries d
            SET status = 'failed', settled_at = now(), last_error = 'not sent: an event of its chunk was not delivered'
           FROM chunk_height h WHERE d.id = h.id RETURNING d.id`,
        [row.id, attempt, error, instance],
      );
      outcomes?.inc({ instance, outcome: 'failed' });
      log.error(
        {
          url: urlOrigin(row.url),
          delivery: row.id,
          attempts: attempt,
          err: error,
          ...(withheld[0] ? { heightWithheld: withheld[0].id } : {}),
        },
        refused ? 'callback refused by the receiver; not retried' : 'callback delivery given up',
      );
      return;
    }
    const delay = backoffMs(attempt, this.options.retryBaseMs ?? 1_000, MAX_RETRY_DELAY_MS);
    await pool.query(
      `UPDATE chain_client_deliveries SET attempts = $2, last_error = $3, next_attempt_at = now() + make_interval(secs => $4::float8 / 1000)
       WHERE id = $1`,
      [row.id, attempt, error, delay],
    );
    outcomes?.inc({ instance, outcome: 'retried' });
    log.warn(
      { url: urlOrigin(row.url), delivery: row.id, attempt, retryInMs: delay, err: error },
      'callback delivery failed',
    );
  }
}

/** `text` with `url` (as given, or as the URL parser writes it) replaced by its origin. */
function withoutUrl(text: string, url: string): string {
  const origin = urlOrigin(url);
  const href = URL.parse(url)?.href;
  const out = text.replaceAll(url, origin);
  return href === undefined ? out : out.replaceAll(href, origin);
}
