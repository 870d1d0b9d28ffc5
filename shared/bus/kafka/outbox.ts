import pg from 'pg';
import { packTexts, unpackedText } from '../../db/packed-texts.js';
import { withTransaction, type Pool, type PoolClient } from '../../db/pool.js';
import type { Logger } from '../../logging/logger.js';
import { WakeSignal } from '../../runtime/wake-signal.js';
import type { OutgoingMessage } from '../port.js';
import { backoffMs, sleep } from '../retry.js';

/** NOTIFY channel a publish into the outbox signals (at commit), so the relay sends at once. */
export const OUTBOX_CHANNEL = 'otmoic_outbox';
const BATCH = 500;
/** Safety net when a notification is missed (e.g. while the listener reconnects). */
const POLL_MS = 1_000;

export interface OutboxBatch {
  topic: string;
  messages: OutgoingMessage[];
}

/** publish(tx) on Kafka: the messages become rows of bus_outbox in the caller's transaction. */
export async function writeOutbox(
  tx: PoolClient,
  topic: string,
  messages: readonly OutgoingMessage[],
): Promise<void> {
  await writeOutboxMany(tx, [{ topic, messages }]);
}

/** Batches for several topics as outbox rows, in order, and the relay's wake-up: one statement. */
export async function writeOutboxMany(
  tx: PoolClient,
  batches: ReadonlyArray<{ topic: string; messages: readonly OutgoingMessage[] }>,
): Promise<void> {
  const rows = batches.flatMap((b) => b.messages.map((m) => ({ topic: b.topic, m })));
  if (rows.length === 0) return;
  // Values packed in one bytea, as the postgres log publishes them (see packTexts); headers as a JSON array.
  const packed = packTexts(
    rows.map((r) => r.m.value),
    'message value',
  );
  await tx.query(
    `WITH ins AS (
       INSERT INTO bus_outbox (topic, key, value, headers)
       SELECT t.t, t.k, ${unpackedText('$3::bytea', 't.s', 't.l')}, t.h::jsonb
       FROM ROWS FROM (unnest($1::text[]), unnest($2::text[]), unnest($4::int[]), unnest($5::int[]),
         json_array_elements($6::json)) WITH ORDINALITY AS t(t, k, s, l, h, i)
       ORDER BY t.i
     )
     SELECT pg_notify($7, d.t) FROM (SELECT DISTINCT t FROM unnest($1::text[]) AS t) AS d(t)`,
    [
      rows.map((r) => r.topic),
      rows.map((r) => r.m.key),
      packed.bytes,
      packed.starts,
      packed.lengths,
      JSON.stringify(rows.map((r) => r.m.headers ?? {})),
      OUTBOX_CHANNEL,
    ],
  );
}

/**
 * Sends committed outbox rows to Kafka in id order (so per key in publish order) and deletes them in the same
 * transaction. One relay works at a time across all processes (a transaction-scoped advisory lock), which is
 * what keeps the order. A send that fails rolls back and is retried: delivery is at least once (a row sent
 * whose delete did not commit is sent again; consumers dedupe by envelope id).
 */
export class OutboxRelay {
  private readonly stopController = new AbortController();
  private readonly wake = new WakeSignal();
  private running: Promise<void> | undefined;
  private listener: pg.Client | undefined;

  constructor(
    private readonly options: {
      pool: Pool;
      connectionString: string;
      log: Logger;
      send(batches: OutboxBatch[]): Promise<void>;
    },
  ) {}

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await this.running;
    await this.listener?.end().catch(() => undefined);
    this.listener = undefined;
  }

  private async loop(): Promise<void> {
    const signal = this.stopController.signal;
    let failures = 0;
    while (!signal.aborted) {
      if (!this.listener) await this.listen().catch(() => undefined);
      this.wake.reset();
      let sent: number;
      try {
        sent = await this.relayOnce();
        failures = 0;
      } catch (err) {
        failures++;
        this.options.log.warn(
          { err: (err as Error).message, failures },
          'outbox relay could not send; retrying',
        );
        await sleep(backoffMs(failures, 200, 10_000), signal);
        continue;
      }
      if (sent === 0) await this.wake.sleep(POLL_MS, signal);
    }
  }

  /** Sends one batch of the oldest rows; returns how many were sent (0: nothing to do or another relay works). */
  async relayOnce(): Promise<number> {
    return withTransaction(this.options.pool, async (tx) => {
      const lock = await tx.query<{ ok: boolean }>(
        `SELECT pg_try_advisory_xact_lock(hashtextextended('otmoic:kafka-outbox', 0)) AS ok`,
      );
      if (!lock.rows[0]!.ok) return 0;
      const { rows } = await tx.query<{
        id: string;
        topic: string;
        key: string;
        value: string;
        headers: Record<string, string>;
      }>(`SELECT id, topic, key, value, headers FROM bus_outbox ORDER BY id LIMIT ${BATCH}`);
      if (rows.length === 0) return 0;
      // Consecutive rows of one topic form one batch; batches go in row order.
      const batches: OutboxBatch[] = [];
      for (const row of rows) {
        const message = { key: row.key, value: row.value, headers: row.headers };
        const last = batches.at(-1);
        if (last?.topic === row.topic) last.messages.push(message);
        else batches.push({ topic: row.topic, messages: [message] });
      }
      await this.options.send(batches);
      await tx.query('DELETE FROM bus_outbox WHERE id = ANY($1::bigint[])', [rows.map((r) => r.id)]);
      // More may be waiting: do not sleep before the next batch.
      if (rows.length === BATCH) this.wake.wake();
      return rows.length;
    });
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      application_name: 'otmoic-outbox',
    });
    const lost = () => {
      if (this.listener === client) this.listener = undefined;
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', () => this.wake.wake());
    try {
      await client.connect();
      await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.stopController.signal.aborted) return void (await client.end());
    this.listener = client;
  }
}
