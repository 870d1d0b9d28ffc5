import pg from 'pg';
import {
  DEDICATED_QUERY_TIMEOUT_MS,
  destroyConnection,
  endWithin,
  queryWithin,
  startHeartbeat,
} from '../../db/dedicated-connection.js';
import { packTexts, unpackedText } from '../../db/packed-texts.js';
import { withTransaction, type Pool, type PoolClient } from '../../db/pool.js';
import type { Logger } from '../../logging/logger.js';
import { WakeSignal } from '../../runtime/wake-signal.js';
import type { OutgoingMessage } from '../port.js';
import { storableHeaders, storableKey } from '../partitioner.js';
import { backoffMs, sleep } from '../retry.js';

/** NOTIFY channel a publish into the outbox signals (at commit), so the relay sends at once. */
export const OUTBOX_CHANNEL = 'otmoic_outbox';
const BATCH = 500;
/**
 * Most bytes of values and keys one relay batch sends (the first row always goes). A batch of 500 rows near a
 * raised max.message.bytes could exceed the broker's socket.request.max.bytes (100 MB by default): the broker
 * closes the connection, which is no refusal, and the same batch would be tried for ever.
 */
const BATCH_BYTES = 16 * 1024 * 1024;
/** Safety net when a notification is missed (e.g. while the listener reconnects). */
const POLL_MS = 1_000;
/** How long stop() waits for the listener's goodbye before ending it by force. */
const STOP_LISTENER_MS = 1_000;

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
      rows.map((r) => storableKey(r.m.key)),
      packed.bytes,
      packed.starts,
      packed.lengths,
      JSON.stringify(rows.map((r) => storableHeaders(r.m.headers))),
      OUTBOX_CHANNEL,
    ],
  );
}

/**
 * Broker errors that refuse the messages themselves, for good: sending them again can never succeed (kafkajs
 * does not retry them either). Anything else (broker away, timeouts, retries exhausted, authorisation) is
 * retried with the rows kept in place, as before.
 */
const REFUSALS = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD']);

/** `err` and its causes, five deep at most (kafkajs wraps the broker's error when it bails). */
type ErrorLike = { type?: unknown; message?: unknown; cause?: unknown };
function* causesOf(err: unknown): Generator<ErrorLike> {
  for (let e = err as ErrorLike | undefined, depth = 0; e && depth < 5; depth++) {
    yield e;
    e = e.cause as typeof e;
  }
}

/** The kafkajs error type of a refusal found in `err` or its causes. */
export function brokerRefusal(err: unknown): string | undefined {
  for (const e of causesOf(err)) if (typeof e.type === 'string' && REFUSALS.has(e.type)) return e.type;
  return undefined;
}

/**
 * Whether `err` (or a cause) says a topic or partition is unknown to the broker. kafkajs keeps every topic a
 * producer or admin ever used in the metadata it refreshes, so once such a topic is deleted each of their
 * calls fails this way, whatever topic it is for (tulios/kafkajs#1146): the client must be replaced.
 */
export function unknownTopic(err: unknown): boolean {
  for (const e of causesOf(err)) {
    if (e.type === 'UNKNOWN_TOPIC_OR_PARTITION') return true;
    if (typeof e.message === 'string' && e.message.includes('does not host this topic-partition'))
      return true;
  }
  return false;
}

/** A row set aside, and why (the broker's refusal, or its topic missing). */
interface Refused {
  row: OutboxRow;
  error: string;
}

interface OutboxRow {
  id: string;
  topic: string;
  key: string;
  value: string;
  headers: Record<string, string>;
}

/**
 * Sends committed outbox rows to Kafka in id order (so per key in publish order) and deletes them in the same
 * transaction. One relay works at a time across all processes (a transaction-scoped advisory lock), which is
 * what keeps the order. A send that fails rolls back and is retried: delivery is at least once (a row sent
 * whose delete did not commit is sent again; consumers dedupe by envelope id).
 *
 * A row the broker refuses for good (brokerRefusal: e.g. larger than the topic's max.message.bytes) would
 * otherwise block every row after it, of every topic, for ever. When a batch is refused the relay splits it
 * in halves, sent one after the other (so in order), down to the single rows the broker refuses; those move
 * to bus_outbox_refused for the operator (error log, `outboxRefused` metric) and the rest go on. Later
 * messages of a refused row's key go on without it: holding the key instead would stop a whole chain's
 * chain.events (keyed by chain id), which is the outage this avoids. So do the rows of a topic that does not
 * exist on the cluster (deleted by an operator, or never created: brokers seldom create topics on demand);
 * a dead-letter topic is created again instead (KafkaBus.send).
 */
export class OutboxRelay {
  private readonly stopController = new AbortController();
  private readonly wake = new WakeSignal();
  private running: Promise<void> | undefined;
  private listener: pg.Client | undefined;
  /** Finds a listener dropped silently (no notification would come, and no error says so). */
  private stopHeartbeat: () => void = () => undefined;
  /** Topics found missing on the cluster, and since when (ms). */
  private readonly missingSince = new Map<string, number>();

  constructor(
    private readonly options: {
      pool: Pool;
      connectionString: string;
      log: Logger;
      send(batches: OutboxBatch[]): Promise<void>;
      /**
       * Those of `topics` that do not exist on the cluster and will not be created by a send (not dead-letter
       * topics), asked after a send failed for an unknown topic.
       */
      missingTopics?(topics: readonly string[]): Promise<string[]>;
      /** How long a topic must stay missing before its rows are set aside (default 30 s). */
      missingTopicGraceMs?: number;
      /** A row of `topic` was set aside (metrics). */
      refused?(topic: string): void;
      /** Default BATCH_BYTES. */
      batchBytes?: number;
    },
  ) {}

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await this.running;
    const listener = this.listener;
    this.listener = undefined;
    this.stopHeartbeat();
    // Not waited for long: over a connection dropped silently the server's goodbye never comes.
    if (listener) await endWithin(listener, STOP_LISTENER_MS);
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

  /**
   * Sends one batch of the oldest rows; returns how many were settled (sent, or set aside as refused; 0:
   * nothing to do or another relay works).
   */
  async relayOnce(): Promise<number> {
    return withTransaction(this.options.pool, async (tx) => {
      const lock = await tx.query<{ ok: boolean }>(
        `SELECT pg_try_advisory_xact_lock(hashtextextended('otmoic:kafka-outbox', 0)) AS ok`,
      );
      if (!lock.rows[0]!.ok) return 0;
      const { rows } = await tx.query<OutboxRow>(
        `SELECT id, topic, key, value, headers FROM (
           SELECT id, topic, key, value, headers, row_number() OVER w AS n,
                  sum(octet_length(value) + octet_length(key)) OVER w AS upto
           FROM (SELECT * FROM bus_outbox ORDER BY id LIMIT ${BATCH}) AS oldest
           WINDOW w AS (ORDER BY id)
         ) AS t WHERE n = 1 OR upto <= $1 ORDER BY id`,
        [this.options.batchBytes ?? BATCH_BYTES],
      );
      if (rows.length === 0) return 0;
      const sent: OutboxRow[] = [];
      const refused: Refused[] = [];
      try {
        await this.sendSplitting(rows, sent, refused);
      } catch (err) {
        // A failure that is not a refusal (broker away): keep what got through, retry the rest later.
        if (sent.length + refused.length === 0) throw err;
        this.options.log.warn(
          { err: (err as Error).message, settled: sent.length + refused.length },
          'outbox relay stopped half-way through a batch; the rest is retried',
        );
      }
      await tx.query('DELETE FROM bus_outbox WHERE id = ANY($1::bigint[])', [sent.map((r) => r.id)]);
      for (const { row, error } of refused) await this.setAside(tx, row, error);
      // More may be waiting (a full batch, one cut at BATCH_BYTES, the rest of a half-sent one): look again at
      // once; an empty outbox ends the round.
      this.wake.wake();
      return sent.length + refused.length;
    });
  }

  /**
   * Sends `rows` as one batch; if the broker refuses it, each half in turn, down to single rows. Halving also
   * gets a batch through whose rows are each accepted but together exceed a partition's batch limit.
   */
  private async sendSplitting(rows: OutboxRow[], sent: OutboxRow[], refused: Refused[]): Promise<void> {
    try {
      await this.options.send(batchesOf(rows));
      sent.push(...rows);
    } catch (err) {
      if (unknownTopic(err) && this.options.missingTopics) {
        const missing = await this.confirmedMissing([...new Set(rows.map((r) => r.topic))]);
        if (missing.size === 0) throw err;
        for (const row of rows)
          if (missing.has(row.topic))
            refused.push({
              row,
              error: `UNKNOWN_TOPIC_OR_PARTITION: topic ${row.topic} does not exist on the cluster`,
            });
        const rest = rows.filter((r) => !missing.has(r.topic));
        if (rest.length > 0) await this.sendSplitting(rest, sent, refused);
        return;
      }
      const refusal = brokerRefusal(err);
      if (!refusal) throw err;
      if (rows.length === 1)
        return void refused.push({ row: rows[0]!, error: `${refusal}: ${(err as Error).message}` });
      const half = Math.ceil(rows.length / 2);
      await this.sendSplitting(rows.slice(0, half), sent, refused);
      await this.sendSplitting(rows.slice(half), sent, refused);
    }
  }

  /**
   * Those of `topics` the cluster has not had for missingTopicGraceMs: a topic created a moment ago may not be
   * in the metadata of the broker asked yet, and its rows must not be set aside for that.
   */
  private async confirmedMissing(topics: string[]): Promise<Set<string>> {
    const missing = new Set(await this.options.missingTopics!(topics));
    const now = Date.now();
    const grace = this.options.missingTopicGraceMs ?? 30_000;
    const confirmed = new Set<string>();
    for (const topic of topics) {
      if (!missing.has(topic)) {
        this.missingSince.delete(topic);
        continue;
      }
      const since = this.missingSince.get(topic) ?? now;
      this.missingSince.set(topic, since);
      if (now - since >= grace) confirmed.add(topic);
    }
    return confirmed;
  }

  private async setAside(tx: PoolClient, row: OutboxRow, error: string): Promise<void> {
    await tx.query(
      `WITH moved AS (DELETE FROM bus_outbox WHERE id = $1 RETURNING *)
       INSERT INTO bus_outbox_refused (id, topic, key, value, headers, created_at, error)
       SELECT id, topic, key, value, headers, created_at, $2 FROM moved`,
      [row.id, error],
    );
    this.options.log.error(
      {
        outboxId: row.id,
        topic: row.topic,
        key: row.key,
        bytes: Buffer.byteLength(row.value) + Buffer.byteLength(JSON.stringify(row.headers)),
        err: error,
      },
      'Kafka refused an outbox message for good: set aside in bus_outbox_refused, later messages go on without it',
    );
    try {
      this.options.refused?.(row.topic);
    } catch {
      // A failing metric must not undo the move.
    }
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      application_name: 'otmoic-outbox',
      connectionTimeoutMillis: DEDICATED_QUERY_TIMEOUT_MS,
    });
    const lost = () => {
      if (this.listener !== client) return;
      this.listener = undefined;
      this.stopHeartbeat();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', () => this.wake.wake());
    // A stop while it connects ends it by force: the loop, which stop() waits for, is waiting here.
    const onStop = () => destroyConnection(client);
    this.stopController.signal.addEventListener('abort', onStop, { once: true });
    try {
      await client.connect();
      await queryWithin(client, DEDICATED_QUERY_TIMEOUT_MS, `LISTEN ${OUTBOX_CHANNEL}`);
    } catch (err) {
      await endWithin(client, STOP_LISTENER_MS);
      throw err;
    } finally {
      this.stopController.signal.removeEventListener('abort', onStop);
    }
    if (this.stopController.signal.aborted) return void (await endWithin(client, STOP_LISTENER_MS));
    this.listener = client;
    // Ended when a `SELECT 1` goes unanswered (lost() runs on its end); listened again by the next pass.
    this.stopHeartbeat = startHeartbeat(client, {
      everyMs: DEDICATED_QUERY_TIMEOUT_MS,
      timeoutMs: DEDICATED_QUERY_TIMEOUT_MS,
      onLate: (reason) => this.options.log.warn({ reason }, 'outbox listener lost; listening again'),
    });
  }
}

/** Consecutive rows of one topic form one batch; batches go in row order. */
function batchesOf(rows: readonly OutboxRow[]): OutboxBatch[] {
  const batches: OutboxBatch[] = [];
  for (const row of rows) {
    const message = { key: row.key, value: row.value, headers: row.headers };
    const last = batches.at(-1);
    if (last?.topic === row.topic) last.messages.push(message);
    else batches.push({ topic: row.topic, messages: [message] });
  }
  return batches;
}
