import { readFileSync } from 'node:fs';
import kafkajs, { Kafka, Partitioners, logLevel, type Admin, type Producer, type SASLOptions } from 'kafkajs';
import { withTransaction, type Pool } from '../../db/pool.js';

// Not among the names Node finds in kafkajs's CommonJS exports: taken from the default export.
const { ConfigResourceTypes } = kafkajs;
import type { Logger } from '../../logging/logger.js';
import {
  batchHandlerOf,
  deadLetterSource,
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
import { initPosition, loadPositions, setPosition } from '../positions.js';
import { storableHeaders, storableKey } from '../partitioner.js';
import { backoffMs, sleep } from '../retry.js';
import { KafkaSubscription } from './kafka-subscription.js';
import type { TopicBatch } from '../publish-many.js';
import { unknownTopic, OutboxRelay, writeOutboxMany, type OutboxBatch } from './outbox.js';
import { KafkaNames } from './names.js';

const noop = (): void => undefined;

/** A replaced admin is disconnected this long after: past kafkajs's request timeout (30 s) and its retries. */
const RETIRED_ADMIN_MS = 120_000;

export interface KafkaTls {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

export interface KafkaBusOptions {
  brokers: string[];
  clientId: string;
  log: Logger;
  /** The PostgreSQL the consumers write their effects to: positions, attempts and the outbox live there. */
  pool: Pool;
  /** For the outbox relay's LISTEN connection. */
  connectionString: string;
  maxAttempts?: number;
  /** Unset: the broker's default.replication.factor. */
  replicationFactor?: number;
  /** Unset: the broker's default. */
  minInsyncReplicas?: number;
  /** A publish not acknowledged by then fails. Default 30 s. */
  publishTimeoutMs?: number;
  /** TLS to the brokers (true: system CAs). */
  ssl?: boolean | KafkaTls;
  sasl?: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string };
  /** How often running members compare their positions with the stored ones (a seek by anyone). */
  positionCheckMs?: number;
  /**
   * How old the consumers' cluster metadata may get (kafkajs metadataMaxAge, default 5 min): partitions added
   * to a topic are consumed once a member's metadata shows them (the group then rebalances).
   */
  metadataMaxAgeMs?: number;
  /** Told of every subscription's deliveries (metrics). */
  observer?: DeliveryObserver;
  /**
   * How long an outbox row's topic must stay missing on the cluster before the row is set aside (default
   * 30 s): a topic created a moment ago may not be in every broker's metadata yet.
   */
  missingTopicGraceMs?: number;
  /**
   * Put before every topic name and consumer group id on the broker (bus.kafka.topicPrefix), so deployments
   * sharing a cluster stay apart; the rest of the program sees the logical names only (see KafkaNames).
   * Default empty: the logical names themselves.
   */
  topicPrefix?: string;
}

/**
 * The production profile's event bus on Kafka (kafkajs). Kafka keeps the log, the partitions and the group
 * membership; the positions of groups live in PostgreSQL (bus_group_offsets) beside the effects, exactly as
 * on the postgres log, and consumers seek to them (Kafka's committed offset is only a hint). publish(tx) goes
 * through a transactional outbox. Delivery, retries and dead letters are the shared `deliver`.
 */
export class KafkaBus implements EventBus {
  readonly kind = 'kafka' as const;
  readonly kafka: Kafka;
  /** Logical names ⇄ the names on the broker: every kafkajs call maps through it. */
  readonly names: KafkaNames;
  private producer: Producer;
  /** The current producer's connect; cleared when the producer is replaced (see send). */
  private producerReady: Promise<void> | undefined;
  private admin: Admin;
  /** The replacement of a failed admin in progress (replaceAdmin). */
  private replacingAdmin: Promise<void> | undefined;
  /** Replaced admins not disconnected yet: calls may still be in flight on them. */
  private readonly retiredAdmins = new Set<Admin>();
  /** Replaced producers not disconnected yet, each with its retirement (retireProducer). */
  private readonly retiredProducers = new Map<Producer, Promise<void>>();
  private readonly outbox: OutboxRelay;
  private connected: Promise<void> | undefined;
  private readonly consumers = new Set<KafkaSubscription>();

  constructor(readonly options: KafkaBusOptions) {
    this.names = new KafkaNames(options.topicPrefix ?? '');
    const log = options.log.child({ component: 'kafkajs' });
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      ssl: tlsOptions(options.ssl),
      sasl: options.sasl as SASLOptions | undefined,
      connectionTimeout: 3_000,
      // Bounded: a broker that stays away fails the call (the callers retry), it does not hang it.
      retry: { retries: 5, initialRetryTime: 200, maxRetryTime: 5_000 },
      logLevel: logLevel.WARN,
      logCreator: () => (entry) =>
        log.warn({ kafka: entry.log.message, namespace: entry.namespace }, 'kafka'),
    });
    this.producer = this.createProducer();
    this.admin = this.kafka.admin();
    this.outbox = new OutboxRelay({
      pool: options.pool,
      connectionString: options.connectionString,
      log: options.log.child({ component: 'kafka-outbox' }),
      send: (batches) => this.send(batches),
      missingTopicGraceMs: options.missingTopicGraceMs,
      missingTopics: async (topics) => {
        const existing = await this.existingTopics();
        // A dead-letter topic is created again from its source topic when missing; with the source gone too
        // (an operator deleted both), it cannot be, and its row must be set aside, or it holds every later row.
        return topics.filter((t) => {
          if (existing.has(t)) return false;
          const source = deadLetterSource(t);
          return source === undefined || !existing.has(source);
        });
      },
      refused: (topic) => options.observer?.outboxRefused?.(topic),
    });
  }

  /**
   * Idempotent (a retried send is not written twice), acks from all in-sync replicas, one request in flight.
   * kafkajs retries an idempotent producer for ever by default, which hung a publish to a missing topic (and
   * the caller's transaction with it): here the retries are bounded and send() has a timeout.
   * Never asks the broker to create a topic it names (kafkajs does by default): a broker that allows it would
   * make a deleted or unknown topic again with its defaults (its partition count: per-key order broken), and
   * the outbox would send the row instead of setting it aside.
   */
  private createProducer(): Producer {
    return this.kafka.producer({
      allowAutoTopicCreation: false,
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { retries: 5, initialRetryTime: 200, maxRetryTime: 5_000 },
    });
  }

  /**
   * Replaces `failed` with a new producer. The old one is disconnected in the background, once `sending` (its
   * send that failed here, still going on in kafkajs after our timeout) is over: disconnected under it, its
   * request timed out, kafkajs's retrier found the producer disconnected and connected it again, and it then
   * stayed connected for ever (one broker connection more for every failed send). close() disconnects them.
   */
  private retireProducer(failed: Producer, sending: Promise<unknown>): void {
    this.producer = this.createProducer();
    this.producerReady = undefined;
    const retired = sending
      .then(noop, noop)
      .then(() => failed.disconnect())
      .then(noop, noop)
      .finally(() => this.retiredProducers.delete(failed));
    this.retiredProducers.set(failed, retired);
  }

  private connectProducer(): Promise<void> {
    const producer = this.producer;
    this.producerReady ??= producer.connect().catch((err: unknown) => {
      if (this.producer === producer) this.producerReady = undefined;
      throw err;
    });
    return this.producerReady;
  }

  get pool(): Pool {
    return this.options.pool;
  }

  get log(): Logger {
    return this.options.log;
  }

  /** Connects once; a failed connect is forgotten, so the next call tries again. */
  private connect(): Promise<void> {
    this.connected ??= Promise.all([this.connectProducer(), this.admin.connect()]).then(
      () => this.outbox.start(),
      (err: unknown) => {
        this.connected = undefined;
        throw err;
      },
    );
    return this.connected;
  }

  async ensureTopics(specs: readonly TopicSpec[]): Promise<void> {
    await this.connect();
    const all = specs.flatMap((s) => [s, { ...s, name: deadLetterTopic(s.name), retentionMs: null }]);
    const existing = await this.existingTopics();
    const missing = all.filter((s) => !existing.has(s.name));
    if (missing.length > 0) await this.createTopics(missing);
    const present = all.filter((s) => existing.has(s.name));
    if (present.length > 0) await this.reconcile(present);
  }

  private async createTopics(specs: readonly TopicSpec[]): Promise<void> {
    // Retried: waiting for leaders can meet metadata not yet there; a repeat finds the topics existing.
    await this.retrying((admin) =>
      admin.createTopics({
        waitForLeaders: true,
        topics: specs.map((s) => ({
          topic: this.names.toKafka(s.name),
          numPartitions: s.partitions,
          ...(this.options.replicationFactor && { replicationFactor: this.options.replicationFactor }),
          configEntries: this.topicConfig(s),
        })),
      }),
    );
  }

  private topicConfig(spec: TopicSpec): Array<{ name: string; value: string }> {
    return [
      { name: 'retention.ms', value: String(spec.retentionMs ?? -1) },
      ...(this.options.minInsyncReplicas
        ? [{ name: 'min.insync.replicas', value: String(this.options.minInsyncReplicas) }]
        : []),
    ];
  }

  /**
   * Existing topics follow the configuration: more partitions when it says more (never fewer: Kafka cannot,
   * and keys would move; never for a topic with fixedPartitions), retention and min.insync.replicas as
   * configured. Replication is only reported.
   */
  private async reconcile(specs: readonly TopicSpec[]): Promise<void> {
    const { names } = this;
    const { topics } = await this.admin.fetchTopicMetadata({
      topics: specs.map((s) => names.toKafka(s.name)),
    });
    const grow: Array<{ topic: string; count: number }> = [];
    for (const spec of specs) {
      const meta = topics.find((t) => t.name === names.toKafka(spec.name));
      if (!meta) continue;
      if (meta.partitions.length < spec.partitions) {
        if (spec.fixedPartitions) {
          // As the postgres log does for every topic: its consumers rely on per-key order over all of it.
          this.log.warn(
            { ...names.logFields(spec.name), existing: meta.partitions.length, configured: spec.partitions },
            'topic keeps its existing partition count: its consumers rely on per-key order over its whole history',
          );
        } else {
          grow.push({ topic: names.toKafka(spec.name), count: spec.partitions });
          this.log.warn(
            { ...names.logFields(spec.name), from: meta.partitions.length, to: spec.partitions },
            'adding partitions: keys hashed to new partitions lose their order across the change',
          );
        }
      }
      const replicas = meta.partitions[0]?.replicas.length ?? 0;
      if (this.options.replicationFactor && replicas !== this.options.replicationFactor) {
        this.log.warn(
          { ...names.logFields(spec.name), replicas, configured: this.options.replicationFactor },
          'topic keeps its replication factor (reassign partitions with Kafka tools to change it)',
        );
      }
    }
    if (grow.length > 0) await this.admin.createPartitions({ topicPartitions: grow });

    const described = await this.admin.describeConfigs({
      includeSynonyms: false,
      resources: specs.map((s) => ({ type: ConfigResourceTypes.TOPIC, name: names.toKafka(s.name) })),
    });
    for (const spec of specs) {
      const current =
        described.resources.find((r) => r.resourceName === names.toKafka(spec.name))?.configEntries ?? [];
      const wanted = this.topicConfig(spec);
      const differs = wanted.some(
        (w) => current.find((c) => c.configName === w.name)?.configValue !== w.value,
      );
      if (!differs) continue;
      // AlterConfigs replaces a topic's whole dynamic config: keep the entries set on it that we do not manage.
      const kept = current
        .filter((c) => !c.isDefault && c.configSource === 1 && !wanted.some((w) => w.name === c.configName))
        .map((c) => ({ name: c.configName, value: c.configValue }));
      await this.admin.alterConfigs({
        validateOnly: false,
        resources: [
          {
            type: ConfigResourceTypes.TOPIC,
            name: names.toKafka(spec.name),
            configEntries: [...kept, ...wanted],
          },
        ],
      });
    }
  }

  /** A subscribed topic's dead-letter topic exists before any message needs it (also `X.dlq.dlq`). */
  private async ensureDeadLetterTopics(topics: readonly string[]): Promise<void> {
    const existing = await this.existingTopics();
    const missing = topics.filter((t) => !existing.has(deadLetterTopic(t)));
    if (missing.length === 0) return;
    const { names } = this;
    const { topics: meta } = await this.admin.fetchTopicMetadata({
      topics: missing.map((t) => names.toKafka(t)),
    });
    await this.createTopics(
      meta.map((t) => ({
        name: deadLetterTopic(names.logical(t.name)),
        partitions: t.partitions.length,
        retentionMs: null,
      })),
    );
  }

  async publish(
    topic: string,
    messages: readonly OutgoingMessage[],
    options: PublishOptions = {},
  ): Promise<void> {
    await this.publishMany([{ topic, messages }], options);
  }

  /** Several topics at once: one outbox statement in a transaction, else one batch to the brokers. */
  async publishMany(batches: readonly TopicBatch[], options: PublishOptions = {}): Promise<void> {
    const nonEmpty = batches.filter((b) => b.messages.length > 0);
    if (nonEmpty.length === 0) return;
    // In a transaction: through the outbox, so nothing reaches Kafka unless the transaction commits.
    if (options.tx) return writeOutboxMany(options.tx, nonEmpty);
    await this.connect();
    await this.send(nonEmpty.map((b) => ({ topic: b.topic, messages: [...b.messages] })));
  }

  /** Sends with bounded retries and an overall timeout (the kafkajs retries alone can take long). */
  private async send(batches: OutboxBatch[]): Promise<void> {
    await this.connect();
    const timeoutMs = this.options.publishTimeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Kafka did not acknowledge the publish within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      // Within the timeout too: a new producer (see below) connects while the broker may be away, and the
      // timer must not fire later with nothing awaiting it (an unhandled rejection).
      await Promise.race([this.connectProducer(), timeout]);
    } catch (err) {
      clearTimeout(timer);
      throw err;
    }
    const producer = this.producer;
    let sending: Promise<unknown> = Promise.resolve();
    try {
      await Promise.race([
        (sending = producer.sendBatch({
          acks: -1,
          timeout: Math.min(timeoutMs, 30_000),
          topicMessages: batches.map((b) => ({
            topic: this.names.toKafka(b.topic),
            // Keys as the outbox stores them, so a key goes to one partition whichever way it is published.
            messages: b.messages.map((m) => ({
              key: storableKey(m.key),
              value: m.value,
              headers: storableHeaders(m.headers),
            })),
          })),
        })),
        timeout,
      ]);
    } catch (err) {
      // Whatever failed, what the broker wrote is not known for every partition, and kafkajs's sequence state
      // may be wrong for it: a request written whose answer was lost (a timeout, a dropped connection) is sent
      // again with its sequence numbers, or the next batch with later ones, which the broker may take for a
      // duplicate or refuse as out of order; and a refused request's other partitions may have been written,
      // while kafkajs takes back the sequence numbers of all of them. A new producer (a new producer id)
      // starts its sequences afresh; what was written is then sent twice (at least once, as always: consumers
      // dedupe by envelope id). It also forgets a topic deleted since, which failed every send (unknownTopic).
      if (this.producer === producer) this.retireProducer(producer, sending);
      // A dead-letter topic deleted by an operator (to clear it) is created again, so the dead letter, and
      // every outbox row after it, goes out at the relay's next try instead of waiting for a restart.
      if (unknownTopic(err)) {
        const sources = batches.flatMap((b) => deadLetterSource(b.topic) ?? []);
        if (sources.length > 0)
          await this.ensureDeadLetterTopics([...new Set(sources)]).catch((cause: Error) =>
            this.options.log.warn({ err: cause.message }, 'could not create a dead-letter topic again'),
          );
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    batchHandlerOf(options); // refuses a subscription without exactly one handler
    await this.connect();
    await this.ensureDeadLetterTopics(options.topics);
    // Every partition has a stored position before the group joins: `latest` means the end as of now.
    const startFrom = options.startFrom ?? 'earliest';
    for (const topic of options.topics) {
      for (const end of await this.topicOffsets(topic)) {
        await initPosition(
          this.pool,
          { group: options.group, topic, partition: end.partition },
          BigInt(startFrom === 'latest' ? end.high : end.low),
        );
      }
    }
    const subscription = new KafkaSubscription(this, {
      ...options,
      maxAttempts: options.maxAttempts ?? this.options.maxAttempts ?? 5,
      log: this.log.child({ group: options.group }),
      positionCheckMs: this.options.positionCheckMs ?? 500,
      metadataMaxAgeMs: this.options.metadataMaxAgeMs,
      observer: this.options.observer,
    });
    this.consumers.add(subscription);
    try {
      await subscription.start();
    } catch (err) {
      await subscription.stop().catch(() => undefined);
      throw err;
    }
    return subscription;
  }

  forget(subscription: KafkaSubscription): void {
    this.consumers.delete(subscription);
  }

  stoppedSubscriptions(): Array<{ group: string; error: string }> {
    return [...this.consumers].flatMap((c) =>
      c.crashed === undefined ? [] : [{ group: c.group, error: c.crashed }],
    );
  }

  /**
   * Admin reads right after a topic was created or a broker came back can meet a partition without a leader
   * yet (NOT_LEADER, retriable), which kafkajs's admin passes through: retried here, bounded.
   */
  private async retrying<T>(fn: (admin: Admin) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const admin = this.admin;
      try {
        return await fn(admin);
      } catch (err) {
        if (unknownTopic(err) && attempt < 10) {
          // An admin that knew a topic deleted since fails every call (unknownTopic): a new one forgets it.
          await this.replaceAdmin(admin);
          continue;
        }
        if (!(err as { retriable?: boolean }).retriable || attempt >= 10) throw err;
        await sleep(backoffMs(attempt, 100, 2_000));
      }
    }
  }

  /**
   * Replaces `failed` with a new admin, once however many callers met its failure together (each one that
   * replaced it disconnected the admin the others had just made, under their calls). The old admin is
   * disconnected once calls still in flight on it are over (kafkajs's request timeout), or at close.
   */
  private async replaceAdmin(failed: Admin): Promise<void> {
    if (this.admin !== failed) return; // replaced meanwhile
    this.replacingAdmin ??= (async () => {
      const fresh = this.kafka.admin();
      await fresh.connect();
      this.admin = fresh;
      this.retiredAdmins.add(failed);
      setTimeout(() => {
        if (this.retiredAdmins.delete(failed)) failed.disconnect().catch(() => undefined);
      }, RETIRED_ADMIN_MS).unref();
    })().finally(() => {
      this.replacingAdmin = undefined;
    });
    await this.replacingAdmin;
  }

  /** The logical names of this bus's topics on the cluster (another prefix's topics are not among them). */
  private async existingTopics(): Promise<Set<string>> {
    return new Set(this.names.logicalTopics(await this.retrying((admin) => admin.listTopics())));
  }

  /** The low and high watermarks of each partition of a logical topic. */
  private topicOffsets(topic: string) {
    return this.retrying((admin) => admin.fetchTopicOffsets(this.names.toKafka(topic)));
  }

  /** The first offset still in the log (retention may have deleted older ones). */
  async lowWatermark(topic: string, partition: number): Promise<bigint> {
    await this.connect();
    const ends = await this.topicOffsets(topic);
    return BigInt(ends.find((e) => e.partition === partition)?.low ?? '0');
  }

  /**
   * The partition's high watermark as the broker's offset list gives it (a leader elected a moment ago answers
   * that list with OFFSET_NOT_AVAILABLE, a retriable error, until its watermark caught up: not a low one).
   */
  async highWatermark(topic: string, partition: number): Promise<bigint | undefined> {
    await this.connect();
    const end = (await this.topicOffsets(topic)).find((e) => e.partition === partition);
    return end === undefined ? undefined : BigInt(end.high);
  }

  /** Writes the group's stored positions; running members move there within positionCheckMs. */
  async seek(group: string, topic: string, position: SeekPosition): Promise<void> {
    await this.connect();
    let targets: Array<{ partition: number; offset: bigint }>;
    if (position.to === 'timestamp') {
      // kafkajs answers the high watermark for a partition with nothing at or after the time.
      const offsets = await this.retrying((admin) =>
        admin.fetchTopicOffsetsByTimestamp(this.names.toKafka(topic), position.at.getTime()),
      );
      targets = offsets.map((o) => ({ partition: o.partition, offset: BigInt(o.offset) }));
    } else {
      const ends = await this.topicOffsets(topic);
      if (position.to === 'offset') {
        const end = ends.find((e) => e.partition === position.partition);
        const high = end === undefined ? undefined : BigInt(end.high);
        if (high === undefined || position.offset < 0n || position.offset > high)
          throw seekOutOfRange(topic, position.partition, position.offset, high);
        targets = [{ partition: position.partition, offset: position.offset }];
      } else
        targets = ends.map((e) => ({
          partition: e.partition,
          offset: BigInt(position.to === 'beginning' ? e.low : e.high),
        }));
    }
    await withTransaction(this.pool, async (tx) => {
      for (const t of targets) await setPosition(tx, { group, topic, partition: t.partition }, t.offset);
    });
  }

  async lag(group: string, topics: readonly string[]): Promise<PartitionLag[]> {
    await this.connect();
    const stored = await loadPositions(this.pool, group, topics);
    // A topic that does not exist has no partitions, as on the postgres log (a dead-letter topic's own
    // dead-letter topic exists only once something subscribed to it).
    const existing = await this.existingTopics();
    const result: PartitionLag[] = [];
    for (const topic of topics.filter((t) => existing.has(t))) {
      for (const end of await this.topicOffsets(topic)) {
        const [low, high] = [BigInt(end.low), BigInt(end.high)];
        let at = stored.get(`${topic}/${end.partition}`) ?? low;
        // Past the end of the log (the topic deleted and created again): the group reads the partition again
        // from its start (KafkaSubscription.positionBeyondEnd), so all of it is still to come. Read as 0, the
        // dead-letter watch took new dead letters for redriven ones and a redrive found nothing to do.
        // (Stored positions are read before the ends, so a live group's is never above them.)
        if (at > high) at = low;
        const lag = high - (at > low ? at : low);
        result.push({ group, topic, partition: end.partition, lag: lag > 0n ? lag : 0n, end: high });
      }
    }
    return result.sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
  }

  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((c) => c.stop()));
    await this.outbox.stop();
    if (this.connected) {
      await this.connected.catch(() => undefined);
      const retired = [...this.retiredAdmins].map((a) => a.disconnect().catch(() => undefined));
      this.retiredAdmins.clear();
      await Promise.all([
        this.producer.disconnect(),
        this.admin.disconnect(),
        ...retired,
        // Now, not once their sends are over (a retiring one connected again is disconnected at its end).
        ...[...this.retiredProducers.keys()].map((p) => p.disconnect().catch(noop)),
      ]);
    }
  }
}

function tlsOptions(ssl: KafkaBusOptions['ssl']) {
  if (!ssl) return undefined;
  if (ssl === true) return true;
  return {
    ...(ssl.caFile && { ca: [readFileSync(ssl.caFile, 'utf8')] }),
    ...(ssl.certFile && { cert: readFileSync(ssl.certFile, 'utf8') }),
    ...(ssl.keyFile && { key: readFileSync(ssl.keyFile, 'utf8') }),
  };
}
