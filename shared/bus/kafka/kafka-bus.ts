import { Kafka, Partitioners, logLevel, type Admin, type Consumer, type Producer } from 'kafkajs';
import type { Logger } from '../../logging/logger.js';
import { deliver } from '../deliver.js';
import {
  deadLetterTopic,
  type BusMessage,
  type EventBus,
  type OutgoingMessage,
  type PartitionLag,
  type SeekPosition,
  type SubscribeOptions,
  type Subscription,
  type TopicSpec,
} from '../port.js';

export interface KafkaBusOptions {
  brokers: string[];
  clientId: string;
  log: Logger;
  maxAttempts?: number;
}

/**
 * The production profile's event bus on Kafka (kafkajs). Thin on purpose: ordering, groups and retention are
 * Kafka's; this adapter adds commit-after-success, bounded retries and the dead-letter topic, the same way
 * the postgres log does (shared `deliver`).
 */
export class KafkaBus implements EventBus {
  readonly kind = 'kafka' as const;
  private readonly kafka: Kafka;
  private readonly producer: Producer;
  private readonly admin: Admin;
  private connected: Promise<void> | undefined;
  private readonly consumers = new Set<KafkaSubscription>();

  constructor(private readonly options: KafkaBusOptions) {
    const log = options.log.child({ component: 'kafkajs' });
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      logLevel: logLevel.WARN,
      logCreator: () => (entry) =>
        log.warn({ kafka: entry.log.message, namespace: entry.namespace }, 'kafka'),
    });
    // Idempotent producer, acks from all in-sync replicas: a retried send is not a duplicate in the log.
    this.producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    this.admin = this.kafka.admin();
  }

  private connect(): Promise<void> {
    this.connected ??= Promise.all([this.producer.connect(), this.admin.connect()]).then(() => undefined);
    return this.connected;
  }

  async ensureTopics(specs: readonly TopicSpec[]): Promise<void> {
    await this.connect();
    const existing = new Set(await this.admin.listTopics());
    const all = specs.flatMap((s) => [s, { ...s, name: deadLetterTopic(s.name), retentionMs: null }]);
    const missing = all.filter((s) => !existing.has(s.name));
    if (missing.length === 0) return;
    await this.admin.createTopics({
      waitForLeaders: true,
      topics: missing.map((s) => ({
        topic: s.name,
        numPartitions: s.partitions,
        configEntries: [{ name: 'retention.ms', value: String(s.retentionMs ?? -1) }],
      })),
    });
  }

  async publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.connect();
    await this.producer.send({
      topic,
      acks: -1,
      messages: messages.map((m) => ({ key: m.key, value: m.value, headers: m.headers ?? {} })),
    });
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    await this.connect();
    if ((options.startFrom ?? 'earliest') === 'latest')
      await this.pinNewGroupAtEnd(options.group, options.topics);
    const consumer = this.kafka.consumer({ groupId: options.group });
    const subscription = new KafkaSubscription(this, consumer, {
      ...options,
      maxAttempts: options.maxAttempts ?? this.options.maxAttempts ?? 5,
      log: this.options.log.child({ group: options.group }),
    });
    this.consumers.add(subscription);
    await subscription.start();
    return subscription;
  }

  /**
   * A new group starting at `latest` gets its offsets set to the current ends before it joins, so that, as on
   * the postgres log, nothing published after subscribe() resolved is skipped (kafkajs would otherwise fix
   * "latest" only at its first fetch). A group with committed offsets keeps them.
   */
  private async pinNewGroupAtEnd(group: string, topics: readonly string[]): Promise<void> {
    const committed = await this.admin.fetchOffsets({ groupId: group, topics: [...topics] });
    for (const { topic, partitions } of committed) {
      if (partitions.every((p) => p.offset === '-1'))
        await this.admin.resetOffsets({ groupId: group, topic, earliest: false });
    }
  }

  forget(subscription: KafkaSubscription): void {
    this.consumers.delete(subscription);
  }

  /** Kafka only moves offsets of a group with no running member: stop the group's consumers first. */
  async seek(group: string, topic: string, position: SeekPosition): Promise<void> {
    await this.connect();
    switch (position.to) {
      case 'beginning':
      case 'end':
        await this.admin.resetOffsets({ groupId: group, topic, earliest: position.to === 'beginning' });
        return;
      case 'offset':
        await this.admin.setOffsets({
          groupId: group,
          topic,
          partitions: [{ partition: position.partition, offset: position.offset.toString() }],
        });
        return;
      case 'timestamp': {
        const offsets = await this.admin.fetchTopicOffsetsByTimestamp(topic, position.at.getTime());
        await this.admin.setOffsets({
          groupId: group,
          topic,
          partitions: offsets.map((o) => ({ partition: o.partition, offset: o.offset })),
        });
      }
    }
  }

  async lag(group: string, topics: readonly string[]): Promise<PartitionLag[]> {
    await this.connect();
    const committed = await this.admin.fetchOffsets({ groupId: group, topics: [...topics] });
    const result: PartitionLag[] = [];
    for (const topic of topics) {
      const ends = await this.admin.fetchTopicOffsets(topic);
      const mine = committed.find((c) => c.topic === topic)?.partitions ?? [];
      for (const end of ends) {
        const at = mine.find((p) => p.partition === end.partition)?.offset ?? '-1';
        const from = at === '-1' ? BigInt(end.low) : BigInt(at);
        result.push({ group, topic, partition: end.partition, lag: BigInt(end.high) - from });
      }
    }
    return result.sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
  }

  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((c) => c.stop()));
    if (this.connected) await Promise.all([this.producer.disconnect(), this.admin.disconnect()]);
  }
}

class KafkaSubscription implements Subscription {
  readonly group: string;
  private readonly stopController = new AbortController();
  private stopped: Promise<void> | undefined;

  constructor(
    private readonly bus: KafkaBus,
    private readonly consumer: Consumer,
    private readonly options: SubscribeOptions & { maxAttempts: number; log: Logger },
  ) {
    this.group = options.group;
  }

  /** Resolves once the consumer joined its group (partitions assigned), or fails after 60 s. */
  async start(): Promise<void> {
    const { consumer, options } = this;
    let removeListener: (() => void) | undefined;
    const joined = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`group ${options.group} did not join within 60 s`)),
        60_000,
      );
      removeListener = consumer.on(consumer.events.GROUP_JOIN, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    await consumer.connect();
    await consumer.subscribe({
      topics: [...options.topics],
      fromBeginning: (options.startFrom ?? 'earliest') === 'earliest',
    });
    await consumer.run({
      autoCommit: false,
      // Partitions are worked one message at a time each: per-key order holds.
      eachMessage: async ({ topic, partition, message }) => {
        const msg: BusMessage = {
          topic,
          partition,
          offset: BigInt(message.offset),
          key: message.key?.toString() ?? '',
          value: message.value?.toString() ?? '',
          headers: Object.fromEntries(
            Object.entries(message.headers ?? {}).map(([k, v]) => [
              k,
              Array.isArray(v) ? String(v[0]) : String(v ?? ''),
            ]),
          ),
          timestamp: new Date(Number(message.timestamp)),
        };
        const commit = () =>
          consumer.commitOffsets([{ topic, partition, offset: (msg.offset + 1n).toString() }]);
        const outcome = await deliver(msg, {
          handler: options.handler,
          maxAttempts: options.maxAttempts,
          group: options.group,
          log: options.log,
          signal: this.stopController.signal,
          commitIn: async () => undefined, // effects are deduped by event id in their own transaction
          commitAfter: commit,
          deadLetter: async (dead) => {
            await this.bus.publish(deadLetterTopic(topic), [dead]);
            await commit();
          },
        });
        // Stopped before settling: make kafkajs stop this partition here so the message is fetched again.
        if (outcome === 'stopped') throw new Error('consumer stopping');
      },
    });
    try {
      await joined;
    } finally {
      removeListener?.();
    }
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopController.abort();
      await this.consumer.disconnect();
      this.bus.forget(this);
    })();
    return this.stopped;
  }
}
