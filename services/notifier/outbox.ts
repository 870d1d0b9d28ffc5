/**
 * The outbox of n8n notifications: rows are written in the same transaction as the event's offset commit,
 * and posted to `n8nUrl` until the receiver answers 2xx, with exponential back-off. Nothing is ever dropped:
 * while the receiver is down rows wait; delivery is at least once (the receiver dedupes by `id`).
 */
import { z } from 'zod';
import { jsonbStorable } from '../../shared/db/nul.js';
import type { Pool, PoolClient } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logging/logger.js';
import { outboundSignal } from '../../shared/runtime/deadline.js';
import { toldOf, type ToldDeadLetters } from './watch.js';
import { webhook, type Webhook } from './webhook.js';

export type NotificationKind =
  | 'violation'
  | 'complaint_outcome'
  | 'submission_failed'
  | 'submission_stuck'
  | 'submission_waiting'
  | 'connector_lagging'
  | 'consumer_lagging'
  | 'message_dead_lettered';

export interface Notification {
  id: string;
  kind: NotificationKind;
  payload: Record<string, unknown>;
}

/**
 * Adds a notification once (a second add with the same id is a no-op). Its payload quotes strings from a chain
 * (an LP id, a complainant, an invalid complaint's reason), which may hold U+0000 or a lone surrogate: jsonb
 * refuses both, and the insert failing dead-lettered the event from the notifier's group, its notification
 * lost. They are stored as `\u0000` and U+FFFD (jsonbStorable), as everywhere else they are kept for display.
 */
export async function enqueue(db: Pool | PoolClient, n: Notification): Promise<void> {
  await db.query(
    'INSERT INTO notifier_outbox (id, kind, payload) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING',
    [n.id, n.kind, JSON.stringify(jsonbStorable(n.payload))],
  );
}

/**
 * Deletes notifications delivered over `keepDays` days ago, at most `batch` a call (the oldest first); returns
 * how many. Undelivered rows are never deleted, however old.
 */
export async function pruneDelivered(db: Pool, keepDays: number, batch = 10_000): Promise<number> {
  // The newest notification of a state (a failures total, a dead-letter total: the id is the condition and
  // its total) is kept whatever its age: it is what tells a later look that this total was told already.
  // Pruned, the same total went out again at the next look, every keepDays.
  const { rowCount } = await db.query(
    `DELETE FROM notifier_outbox WHERE id IN (
       SELECT o.id FROM notifier_outbox o
        WHERE o.delivered_at IS NOT NULL AND o.delivered_at < now() - make_interval(days => $1)
          AND (o.kind <> ALL($3::text[]) OR EXISTS (
                SELECT 1 FROM notifier_outbox n
                 WHERE n.kind = o.kind AND n.created_at > o.created_at
                   AND regexp_replace(n.id, ':[^:]*$', '') = regexp_replace(o.id, ':[^:]*$', '')))
        ORDER BY o.delivered_at LIMIT $2)`,
    [keepDays, batch, STATE_KINDS],
  );
  return rowCount ?? 0;
}

/** What the newest notification of a dead-letter topic told (its row is kept: pruneDelivered). */
export async function lastToldDeadLetters(
  db: Pick<Pool, 'query'>,
  deadLetterTopicName: string,
): Promise<ToldDeadLetters | undefined> {
  const { rows } = await db.query<{ id: string; levels: unknown }>(
    `SELECT id, payload->'levels' AS levels FROM notifier_outbox
      WHERE kind = 'message_dead_lettered' AND left(id, length($1)) = $1
      ORDER BY created_at DESC LIMIT 1`,
    [`message_dead_lettered:${deadLetterTopicName}:`],
  );
  const told = rows[0] && toldOf(rows[0].id);
  if (!told) return undefined;
  // The levels as told then (notifications before levels have none: the watch then compares totals).
  const levels = storedLevels.safeParse(rows[0]!.levels);
  return levels.success ? { ...told, levels: levels.data } : told;
}

/** `levels` of a stored message_dead_lettered payload: messages per dead-letter topic. */
const storedLevels = z.record(z.string(), z.number().int().nonnegative());

/** Notifications of a state whose id ends with its total (watch.ts): `<kind>:<what>:<total>`. */
const STATE_KINDS = ['submission_failed', 'message_dead_lettered'];
/** Refusals one after another, after a delivery in the same pass, that count as an outage (see sendDue). */
const REFUSED_IN_A_ROW = 2;
/** Answers that say the receiver is away, not that it refuses the payload (a proxy in front of it, a limit). */
const AWAY = /^HTTP (429|502|503|504)\b/;

export interface OutboxSenderOptions {
  pool: Pool;
  url: string;
  log: Logger;
  /** First retry after this; doubled per failure up to maxBackoffMs. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** How often due rows are looked for when nothing woke the sender. */
  pollMs?: number;
  timeoutMs?: number;
  /** The process stops: a post in flight is aborted, and its row stays as it was (no failed attempt). */
  stopSignal?: AbortSignal;
  onOutcome?: (outcome: 'delivered' | 'failed') => void;
}

export class OutboxSender {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private downSince: number | undefined;
  /**
   * Whether the outage began with a failure before any delivery of its pass (the receiver away): only then do
   * the rows that failed meanwhile go at once when it answers again. One that began with a failure right after
   * a delivery is most likely that row's own (a workflow that hangs on its payload): reset, it was posted again
   * after every single delivery, each time costing a whole timeout.
   */
  private resetOnRecovery = false;
  private readonly webhook: Webhook;

  constructor(private readonly options: OutboxSenderOptions) {
    this.webhook = webhook(options.url);
  }

  start(): void {
    this.schedule(0);
  }

  /** Look now (a row was added). */
  wake(): void {
    if (!this.stopped && !this.running) this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = this.sendDue()
        .catch((err: Error) => this.options.log.warn({ err: err.message }, 'n8n outbox pass failed'))
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.schedule(this.options.pollMs ?? 1_000);
        });
    }, ms);
  }

  /** Posts every due row, oldest first; each row is locked while it is posted (several processes may run). */
  private async sendDue(): Promise<void> {
    const { pool, log } = this.options;
    // A row the receiver answers with an error after another was taken in this pass is refused by a receiver
    // that is up (its workflow fails on that payload): it waits out its own back-off, and the others go on.
    // Taken for an outage, it ended every pass, and each later delivery ("reachable again") sent it once more:
    // one delivery per poll. No answer at all (a timeout, a refused connection), an answer that says it is away
    // (429, 502, 503, 504), or REFUSED_IN_A_ROW refusals one after another, is an outage still: the pass ends,
    // rather than trying every row against it.
    let deliveredThisPass = false;
    let refusedInRow = 0;
    while (!this.stopped) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const { rows } = await client.query<{
          id: string;
          kind: string;
          payload: Record<string, unknown>;
          attempts: number;
          created_at: Date;
        }>(
          `SELECT id, kind, payload, attempts, created_at FROM notifier_outbox
            WHERE delivered_at IS NULL AND next_attempt_at <= now()
            ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`,
        );
        const row = rows[0];
        if (!row) {
          await client.query('COMMIT');
          return;
        }
        const error = await this.post({
          id: row.id,
          kind: row.kind,
          created_at: row.created_at,
          ...row.payload,
        });
        if (error !== undefined && this.options.stopSignal?.aborted) {
          // Cut off by the stop, not refused by n8n: posted again after the restart.
          await client.query('ROLLBACK');
          return;
        }
        if (error === undefined) {
          await client.query(
            'UPDATE notifier_outbox SET delivered_at = now(), attempts = attempts + 1 WHERE id = $1',
            [row.id],
          );
          await client.query('COMMIT');
          this.options.onOutcome?.('delivered');
          if (this.downSince !== undefined) {
            // The rows that failed during the outage wait out their back-off (up to maxBackoffMs) no longer:
            // they go now, oldest first, instead of after newer ones.
            if (this.resetOnRecovery)
              await pool.query(
                'UPDATE notifier_outbox SET next_attempt_at = now() WHERE delivered_at IS NULL AND next_attempt_at > now()',
              );
            log.info({ id: row.id }, 'n8n receiver reachable again');
          }
          this.downSince = undefined;
          this.resetOnRecovery = false;
          deliveredThisPass = true;
          refusedInRow = 0;
          continue;
        }
        const backoff = Math.min(
          (this.options.baseBackoffMs ?? 1_000) * 2 ** Math.min(row.attempts, 20),
          this.options.maxBackoffMs ?? 300_000,
        );
        await client.query(
          `UPDATE notifier_outbox SET attempts = attempts + 1, last_error = $2,
              next_attempt_at = now() + make_interval(secs => $3::double precision / 1000) WHERE id = $1`,
          [row.id, error, backoff],
        );
        await client.query('COMMIT');
        this.options.onOutcome?.('failed');
        if (
          deliveredThisPass &&
          error.startsWith('HTTP ') &&
          !AWAY.test(error) &&
          ++refusedInRow < REFUSED_IN_A_ROW
        ) {
          log.warn(
            { id: row.id, attempts: row.attempts + 1, err: error },
            'n8n receiver refused a notification',
          );
          continue;
        }
        if (!deliveredThisPass) this.resetOnRecovery = true;
        // Once per outage, not per row and attempt.
        if (this.downSince === undefined) {
          this.downSince = Date.now();
          log.warn({ err: error }, 'n8n receiver failing; notifications wait in the outbox');
        }
        return;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    }
  }

  /** undefined when delivered; otherwise why not (no URL, no message: they may carry a token). */
  private async post(body: Record<string, unknown>): Promise<string | undefined> {
    try {
      const response = await fetch(this.webhook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-otmoic-notification-id': String(body.id),
          ...(this.webhook.authorization ? { authorization: this.webhook.authorization } : {}),
        },
        body: JSON.stringify(body),
        signal: outboundSignal(this.options.timeoutMs ?? 30_000, this.options.stopSignal),
        // Followed, a 301/302 turns the POST into a GET without the body whose 2xx would count as delivered
        // (and would take the credentials elsewhere): a redirect is a failure, n8nUrl must be the final URL.
        redirect: 'manual',
      });
      await response.arrayBuffer().catch(() => undefined);
      if (response.ok) return undefined;
      return response.status >= 300 && response.status < 400
        ? `HTTP ${response.status} (a redirect, not followed: set n8nUrl to its target)`
        : `HTTP ${response.status}`;
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      return cause ?? (err as Error).name;
    }
  }
}
