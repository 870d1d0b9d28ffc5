import type pg from 'pg';
import { withTransaction, type PoolClient } from '../../db/pool.js';
import type { Logger } from '../../logging/logger.js';
import { partitionFor, storableHeaders, storableKey } from '../partitioner.js';
import { setPosition } from '../positions.js';
import {
  batchHandlerOf,
  deadLetterTopic,
  type DeliveryObserver,
  type EventBus,
  type OutgoingMessage,
  type PartitionLag,
  type PublishOptions,
  type SeekPosition,
  type SubscribeOptions,
  type Subscription,
  type TopicSpec,
  seekOutOfRange,
} from '../port.js';
import type { TopicBatch } from '../publish-many.js';
import { packTexts, unpackedText } from '../../db/packed-texts.js';
import { Statement } from '../../db/statement.js';
import { DEDICATED_QUERY_TIMEOUT_MS } from '../../db/dedicated-connection.js';
import { BUS_CHANNEL } from './channel.js';
import { FETCH_BYTES, PostgresSubscription } from './postgres-subscription.js';

export interface PostgresBusOptions {
  pool: pg.Pool;
  /** How the subscription opens its dedicated LISTEN / advisory-lock connection. */
  connectionString: string;
  log: Logger;
  maxAttempts?: number;
  /** Safety net if a notification is missed (e.g. while reconnecting). Not the wake-up path. */
  idlePollMs?: number;
  /** How often members heartbeat and rebalance partitions. */
  rebalanceMs?: number;
  /**
   * How long the control connection may leave a statement unanswered before it counts as lost (a NAT or
   * firewall that dropped it silently): its partitions are then given up and taken again on a new connection.
   * Default DEDICATED_QUERY_TIMEOUT_MS (10 s).
   */
  controlTimeoutMs?: number;
  /** Most bytes of keys and values a consumer reads of a partition at once. Default FETCH_BYTES. */
  fetchBytes?: number;
  /** Told of every subscription's deliveries (metrics). */
  observer?: DeliveryObserver;
}

/**
 * The embedded profile's event bus: an append-only log in PostgreSQL, one ordered sequence of offsets per
 * topic partition, consumer groups with committed offsets, LISTEN/NOTIFY wake-up.
 */
export class PostgresBus implements EventBus {
  readonly kind = 'postgres' as const;
  private readonly partitions = new Map<string, number>();
  private readonly subscriptions = new Set<PostgresSubscription>();

  constructor(private readonly options: PostgresBusOptions) {
    const { fetchBytes } = options;
    if (fetchBytes !== undefined && (!Number.isSafeInteger(fetchBytes) || fetchBytes < 1))
      throw new Error(`PostgresBus: fetchBytes must be a positive integer, not ${fetchBytes}`);
  }

  async ensureTopics(specs: readonly TopicSpec[]): Promise<void> {
    const all = specs.flatMap((s) => [s, { ...s, name: deadLetterTopic(s.name), retentionMs: null }]);
    await withTransaction(this.options.pool, async (client) => {
      for (const spec of all) {
        await client.query(
          `INSERT INTO bus_topics (topic, partitions, retention_ms) VALUES ($1, $2, $3)
           ON CONFLICT (topic) DO UPDATE SET retention_ms = EXCLUDED.retention_ms`,
          [spec.name, spec.partitions, spec.retentionMs],
        );
        const { rows } = await client.query<{ partitions: number }>(
          'SELECT partitions FROM bus_topics WHERE topic = $1',
          [spec.name],
        );
        const partitions = rows[0]!.partitions;
        if (partitions !== spec.partitions) {
          // Changing the partition count would move keys between partitions and break per-key order.
          this.options.log.warn(
            { topic: spec.name, existing: partitions, configured: spec.partitions },
            'topic keeps its existing partition count',
          );
        }
        await client.query(
          `INSERT INTO bus_partitions (topic, partition) SELECT $1, p FROM generate_series(0, $2 - 1) p
           ON CONFLICT DO NOTHING`,
          [spec.name, partitions],
        );
        this.partitions.set(spec.name, partitions);
      }
    });
  }

  async partitionCount(topic: string, client: Pick<pg.Pool, 'query'> = this.options.pool): Promise<number> {
    const known = this.partitions.get(topic);
    if (known !== undefined) return known;
    const { rows } = await client.query<{ partitions: number }>(
      'SELECT partitions FROM bus_topics WHERE topic = $1',
      [topic],
    );
    if (rows.length === 0) throw new Error(`topic "${topic}" does not exist (ensureTopics first)`);
    this.partitions.set(topic, rows[0]!.partitions);
    return rows[0]!.partitions;
  }

  /**
   * A subscribed topic's dead-letter topic exists before any message can need it (also for a subscription to
   * a dead-letter topic itself: `X.dlq.dlq`).
   */
  private async ensureDeadLetterTopic(topic: string): Promise<void> {
    const partitions = await this.partitionCount(topic);
    const dlq = deadLetterTopic(topic);
    await withTransaction(this.options.pool, async (client) => {
      await client.query(
        `INSERT INTO bus_topics (topic, partitions, retention_ms) VALUES ($1, $2, NULL) ON CONFLICT DO NOTHING`,
        [dlq, partitions],
      );
      await client.query(
        `INSERT INTO bus_partitions (topic, partition)
         SELECT $1, p FROM generate_series(0, (SELECT partitions FROM bus_topics WHERE topic = $1) - 1) p
         ON CONFLICT DO NOTHING`,
        [dlq],
      );
    });
  }

  async publish(
    topic: string,
    messages: readonly OutgoingMessage[],
    options: PublishOptions = {},
  ): Promise<void> {
    await this.publishMany([{ topic, messages }], options);
  }

  /**
   * Publishes to several topics as one SQL statement: every partition's offsets are taken, the rows written
   * and the topics notified at once. A single statement is atomic, so without a caller's transaction there is
   * no BEGIN / COMMIT around it; with `tx` nothing is visible before that transaction commits.
   */
  async publishMany(batches: readonly TopicBatch[], options: PublishOptions = {}): Promise<void> {
    const client: Pick<pg.Pool, 'query'> = options.tx ?? this.options.pool;
    const statement = new Statement();
    const topics = await this.addPublish(statement, batches, { client });
    if (topics.length === 0) return;
    try {
      await statement.run(client);
    } catch (err) {
      throw missingPartition(err, topics);
    }
  }

  /**
   * Adds a publish of `batches` to `statement` (which may carry other work: see Statement), so a caller can
   * write its own rows and the messages in one statement. `guard`: an SQL condition on the statement's other
   * CTEs; when it is false nothing is published. Returns the topics written (none: nothing was added).
   * Run errors should go through missingPartition().
   */
  async addPublish(
    statement: Statement,
    batches: readonly TopicBatch[],
    options: { client?: Pick<pg.Pool, 'query'>; guard?: string } = {},
  ): Promise<string[]> {
    const topics: string[] = [];
    const partitions: number[] = [];
    const indexes: number[] = [];
    const keys: string[] = [];
    const values: string[] = [];
    const headers: Array<Record<string, string>> = [];
    // Index of each message within its partition: its offset is the partition's next offset plus this. Per
    // topic across the batches: a topic may come in two of them (two would otherwise share offsets).
    const nextByTopic = new Map<string, Map<number, number>>();
    for (const { topic, messages } of batches) {
      if (messages.length === 0) continue;
      const count = await this.partitionCount(topic, options.client);
      let next = nextByTopic.get(topic);
      if (next === undefined) nextByTopic.set(topic, (next = new Map()));
      for (const m of messages) {
        const key = storableKey(m.key);
        const partition = partitionFor(key, count);
        const index = next.get(partition) ?? 0;
        next.set(partition, index + 1);
        topics.push(topic);
        partitions.push(partition);
        indexes.push(index);
        keys.push(key);
        values.push(m.value);
        headers.push(storableHeaders(m.headers));
      }
    }
    if (topics.length === 0) return [];
    const m = statement.name('bus_m');
    const n = statement.name('bus_n');
    const locked = statement.name('bus_locked');
    const o = statement.name('bus_o');
    // Values travel packed in one bytea (no escaping on either side: see packTexts), headers as a JSON array;
    // ROWS FROM zips the columns by position.
    const packed = packTexts(values, 'message value');
    const bytes = statement.param(packed.bytes, 'bytea');
    statement.with(
      m,
      `SELECT r.topic, r.partition, r.i, r.key, ${unpackedText(bytes, 'r.s', 'r.l')} AS value, r.headers
         FROM ROWS FROM (unnest(${statement.param(topics, 'text[]')}),
           unnest(${statement.param(partitions, 'int[]')}), unnest(${statement.param(indexes, 'int[]')}),
           unnest(${statement.param(keys, 'text[]')}),
           unnest(${statement.param(packed.starts, 'int[]')}), unnest(${statement.param(packed.lengths, 'int[]')}),
           json_array_elements(${statement.param(JSON.stringify(headers), 'json')}))
           AS r(topic, partition, i, key, s, l, headers)
       ${options.guard ? `WHERE ${options.guard}` : ''}`,
    );
    statement.with(n, `SELECT topic, partition, count(*) AS n FROM ${m} GROUP BY topic, partition`);
    // The partition rows are locked in (topic, partition) order, so two publishers never wait on each other's
    // locks in a cycle; the UPDATE then only touches rows already held. The locks are kept until commit, so
    // offsets become visible in order and stay gap-free.
    statement.with(
      locked,
      `SELECT p.topic, p.partition FROM bus_partitions p JOIN ${n} USING (topic, partition)
       ORDER BY p.topic, p.partition FOR UPDATE OF p`,
      true,
    );
    statement.with(
      o,
      `UPDATE bus_partitions p SET next_offset = p.next_offset + n.n
       FROM ${n} n JOIN ${locked} USING (topic, partition)
       WHERE p.topic = n.topic AND p.partition = n.partition
       RETURNING p.topic, p.partition, p.next_offset - n.n AS first`,
    );
    // A message whose partition row is missing gets a NULL offset and fails the statement (NOT NULL)
    // instead of being dropped.
    statement.with(
      statement.name('bus_ins'),
      `INSERT INTO bus_messages (topic, partition, "offset", key, value, headers)
       SELECT m.topic, m.partition, o.first + m.i, m.key, m.value, m.headers::jsonb
       FROM ${m} m LEFT JOIN ${o} o ON o.topic = m.topic AND o.partition = m.partition`,
    );
    // Delivered at commit; identical payloads within one transaction are folded into one.
    statement.output(
      statement.name('bus_notified'),
      `(SELECT count(pg_notify(${statement.param(BUS_CHANNEL)}, t)) FROM (SELECT DISTINCT topic FROM ${n}) AS d(t))`,
    );
    return [...new Set(topics)];
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    batchHandlerOf(options); // refuses a subscription without exactly one handler
    for (const topic of options.topics) await this.ensureDeadLetterTopic(topic);
    const subscription = new PostgresSubscription(this, {
      ...options,
      maxAttempts: options.maxAttempts ?? this.options.maxAttempts ?? 5,
      startFrom: options.startFrom ?? 'earliest',
      pool: this.options.pool,
      connectionString: this.options.connectionString,
      log: this.options.log.child({ group: options.group }),
      idlePollMs: this.options.idlePollMs ?? 5_000,
      rebalanceMs: this.options.rebalanceMs ?? 1_000,
      controlTimeoutMs: this.options.controlTimeoutMs ?? DEDICATED_QUERY_TIMEOUT_MS,
      fetchBytes: this.options.fetchBytes ?? FETCH_BYTES,
      observer: this.options.observer,
      onStopped: (s) => this.subscriptions.delete(s),
    });
    this.subscriptions.add(subscription);
    await subscription.start();
    return subscription;
  }

  async seek(group: string, topic: string, position: SeekPosition): Promise<void> {
    const count = await this.partitionCount(topic);
    const partitions =
      position.to === 'offset' ? [position.partition] : Array.from({ length: count }, (_, i) => i);
    await withTransaction(this.options.pool, async (client) => {
      for (const partition of partitions) {
        const target = await this.resolvePosition(client, topic, partition, position);
        await setPosition(client, { group, topic, partition }, target);
      }
      // Running members re-read their position when woken.
      await client.query('SELECT pg_notify($1, $2)', [BUS_CHANNEL, topic]);
    });
  }

  private async resolvePosition(
    client: PoolClient,
    topic: string,
    partition: number,
    position: SeekPosition,
  ): Promise<bigint> {
    // The partition's end (its next offset); undefined when the topic has no such partition.
    const endOf = async (): Promise<bigint | undefined> => {
      const { rows } = await client.query<{ next_offset: string }>(
        'SELECT next_offset FROM bus_partitions WHERE topic = $1 AND partition = $2',
        [topic, partition],
      );
      return rows[0] ? BigInt(rows[0].next_offset) : undefined;
    };
    switch (position.to) {
      case 'beginning':
        return 0n;
      case 'offset': {
        const next = await endOf();
        if (next === undefined || position.offset < 0n || position.offset > next)
          throw seekOutOfRange(topic, partition, position.offset, next);
        return position.offset;
      }
      case 'end':
      case 'timestamp': {
        const next = (await endOf()) ?? 0n;
        if (position.to === 'end') return next;
        const first = await client.query<{ offset: string }>(
          `SELECT "offset" FROM bus_messages WHERE topic = $1 AND partition = $2 AND created_at >= $3
           ORDER BY "offset" LIMIT 1`,
          [topic, partition, position.at],
        );
        return first.rows[0] ? BigInt(first.rows[0].offset) : next;
      }
    }
  }

  /**
   * Counted from the group's position or the partition's first message still there, whichever is later (Kafka
   * counts from its low watermark too): messages retention deleted before the group handled them are not to
   * come. Counted from the position alone, a group behind a partition whose messages had all expired lagged by
   * them until the partition's next message (a consumer_lagging alert that never cleared, a replay or a redrive
   * waiting for ever for its ends). One statement, one snapshot: the end and the first message agree.
   */
  async lag(group: string, topics: readonly string[]): Promise<PartitionLag[]> {
    const { rows } = await this.options.pool.query<{
      topic: string;
      partition: number;
      lag: string;
      end: string;
    }>(
      `SELECT p.topic, p.partition,
              p.next_offset - GREATEST(COALESCE(g.next_offset, 0), COALESCE(f.first, p.next_offset)) AS lag,
              p.next_offset AS "end"
       FROM bus_partitions p
       LEFT JOIN bus_group_offsets g ON g.group_id = $1 AND g.topic = p.topic AND g.partition = p.partition
       LEFT JOIN LATERAL (
         SELECT m."offset" AS first FROM bus_messages m
         WHERE m.topic = p.topic AND m.partition = p.partition ORDER BY m."offset" LIMIT 1
       ) f ON true
       WHERE p.topic = ANY($2) ORDER BY p.topic, p.partition`,
      [group, topics],
    );
    return rows.map((r) => ({
      group,
      topic: r.topic,
      partition: r.partition,
      lag: BigInt(r.lag),
      end: BigInt(r.end),
    }));
  }

  /** Deletes messages past their topic's retention. Returns how many. */
  async prune(): Promise<number> {
    // One statement: what it deleted that a group had not handled yet (at or past the group's position) is
    // counted from the same rows, so the warning can never miss a deletion.
    const { rows } = await this.options.pool.query<{
      deleted: number;
      unhandled: Array<{ group: string; topic: string; partition: number; messages: number }>;
    }>(
      `WITH deleted AS (
         DELETE FROM bus_messages m USING bus_topics t
         WHERE m.topic = t.topic AND t.retention_ms IS NOT NULL
           AND m.created_at < now() - make_interval(secs => t.retention_ms / 1000.0)
         RETURNING m.topic, m.partition, m."offset"
       ), unhandled AS (
         SELECT g.group_id AS "group", d.topic, d.partition, count(*)::int AS messages
         FROM deleted d JOIN bus_group_offsets g
           ON g.topic = d.topic AND g.partition = d.partition AND d."offset" >= g.next_offset
         GROUP BY g.group_id, d.topic, d.partition
       )
       SELECT (SELECT count(*)::int FROM deleted) AS deleted,
              COALESCE((SELECT json_agg(u ORDER BY u."group", u.topic, u.partition) FROM unhandled u), '[]') AS unhandled`,
    );
    const { deleted, unhandled } = rows[0]!;
    // Kafka's consumers warn the same way when retention passed them (kafka-subscription.ts).
    for (const u of unhandled)
      this.options.log.warn(u, 'messages expired before this group handled them (topic retention)');
    return deleted;
  }

  async close(): Promise<void> {
    await Promise.all([...this.subscriptions].map((s) => s.stop()));
  }
}

/** A publish's NOT NULL failure is a missing partition row: say so. Other errors pass unchanged. */
export function missingPartition(err: unknown, topics: readonly string[]): unknown {
  if ((err as { code?: string }).code === '23502' && /"offset"/.test((err as Error).message))
    return new Error(`a partition of ${topics.join(', ')} does not exist`, { cause: err });
  return err;
}
