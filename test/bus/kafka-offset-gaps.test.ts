import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import { KafkaSubscription } from '../../shared/bus/kafka/kafka-subscription.js';
import type { BusMessage } from '../../shared/bus/port.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { deleteTopic } from '../support/delete-topic.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { waitFor } from '../support/wait.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('Kafka offsets without a visible message', kafka.skipReason);

/**
 * A topic written by a transactional producer holds offsets no consumer sees (the commit marker after each
 * transaction; aborted records; records compaction removed). The group passes over them instead of seeking
 * the first of them for ever.
 */
describe.skipIf(kafka.skipReason)('Kafka offsets without a visible message, and past the log', () => {
  let db: TestDatabase;
  let bus: KafkaBus;

  const others: KafkaBus[] = [];
  const newBus = () => {
    const made = new KafkaBus({
      brokers: kafka.target!.brokers,
      clientId: 'offset-gaps-test',
      log: createLogger({ level: 'silent' }),
      pool: db.pool,
      connectionString: db.url,
    });
    others.push(made);
    return made;
  };
  beforeAll(async () => {
    db = await createTestDatabase();
    bus = newBus();
  });
  afterAll(async () => {
    await Promise.all(others.map((b) => b.close()));
    await db?.drop();
  });

  it('handles the messages after a transaction marker and an aborted transaction, once, in order', async () => {
    const topic = `gaps-${randomBytes(4).toString('hex')}`;
    await bus.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
    const producer = new Kafka({ brokers: kafka.target!.brokers, logLevel: logLevel.NOTHING }).producer({
      transactionalId: `tx-${topic}`,
      idempotent: true,
      maxInFlightRequests: 1,
    });
    await producer.connect();
    try {
      const committed = await producer.transaction();
      await committed.send({ topic, messages: [{ key: 'k', value: 'in-committed' }] });
      await committed.commit();
      const aborted = await producer.transaction();
      await aborted.send({ topic, messages: [{ key: 'k', value: 'in-aborted' }] });
      await aborted.abort();
    } finally {
      await producer.disconnect();
    }
    await bus.publish(topic, [{ key: 'k', value: 'after' }]);

    const received: BusMessage[] = [];
    const subscription = await bus.subscribe({
      group: `g-${topic}`,
      topics: [topic],
      handler: async (m) => void received.push(m),
    });
    try {
      await waitFor(() => received.some((m) => m.value === 'after'), 'the message after the gaps', 20_000);
      expect(received.map((m) => m.value)).toEqual(['in-committed', 'after']);
      const { rows } = await db.pool.query<{ next_offset: string }>(
        'SELECT next_offset FROM bus_group_offsets WHERE topic = $1',
        [topic],
      );
      expect(rows.map((r) => Number(r.next_offset))).toEqual([Number(received.at(-1)!.offset) + 1]);
    } finally {
      await subscription.stop();
    }
  });

  it('a position past the end of the log (the topic created again) reads the new messages, not skips them', async () => {
    const topic = `recreated-${randomBytes(4).toString('hex')}`;
    const group = `g-${topic}`;
    const first = newBus();
    await first.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
    await first.publish(
      topic,
      [1, 2, 3, 4, 5].map((i) => ({ key: 'k', value: `old-${i}` })),
    );
    const seen: string[] = [];
    const handler = async (m: BusMessage) => void seen.push(m.value);
    let subscription = await first.subscribe({ group, topics: [topic], handler });
    await waitFor(() => seen.length === 5, 'the old messages');
    await subscription.stop();

    // The operator deletes the topic and creates it again; new messages come.
    await deleteTopic(kafka.target!.brokers, topic);
    const second = newBus();
    await waitFor(
      async () =>
        second
          .ensureTopics([{ name: topic, partitions: 1, retentionMs: null }])
          .then(() => true)
          .catch(() => false),
      'the topic created again',
      20_000,
    );
    await second.publish(
      topic,
      [1, 2, 3].map((i) => ({ key: 'k', value: `new-${i}` })),
    );
    subscription = await second.subscribe({ group, topics: [topic], handler });
    try {
      await waitFor(() => seen.length === 8, 'the new messages', 20_000);
      expect(seen).toEqual(['old-1', 'old-2', 'old-3', 'old-4', 'old-5', 'new-1', 'new-2', 'new-3']);
    } finally {
      await subscription.stop();
    }
  });

  it('a fetch answer whose high watermark is below the stored position, the log reaching it, moves nothing', async () => {
    // A partition leader elected a moment ago answers fetches with its own high watermark, which can lag the
    // previous leader's until its followers catch up; after the rebalance that a broker restart brings, kafkajs
    // fetches from Kafka's committed offset (a hint, behind the stored position) before the seek to the stored
    // one lands. Such an answer holds only handled messages and a watermark below the position: taken for
    // "past the end of the log", it moved the group back to the partition's start (every message handled again,
    // and told again where a consumer's record of it was pruned, as the notifier's after keepDeliveredDays).
    const topic = `stale-hw-${randomBytes(4).toString('hex')}`;
    const group = `g-${topic}`;
    await bus.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
    await bus.publish(
      topic,
      [0, 1, 2, 3, 4].map((i) => ({ key: 'k', value: `m-${i}` })),
    );
    await bus.seek(group, topic, { to: 'end' }); // the group handled all five: its position is 5
    const subscription = new KafkaSubscription(bus, {
      group,
      topics: [topic],
      handler: async () => undefined,
      maxAttempts: 5,
      log: createLogger({ level: 'silent' }),
      positionCheckMs: 500,
    });
    // Not started (no group): the seeks it asks of kafkajs are recorded.
    const seeks: string[] = [];
    (subscription as unknown as { consumer: { seek(to: { offset: string }): void } }).consumer.seek = (to) =>
      void seeks.push(to.offset);
    const message = (offset: number) => ({
      offset: String(offset),
      key: Buffer.from('k'),
      value: Buffer.from(`m-${offset}`),
      headers: {},
      timestamp: String(Date.now()),
      attributes: 0,
    });
    const resolved: string[] = [];
    // What the new leader answers a fetch from offset 0 with: the messages below its watermark, 3.
    await (subscription as unknown as { onBatch(payload: unknown): Promise<void> }).onBatch({
      batch: {
        topic: bus.names.toKafka(topic),
        partition: 0,
        highWatermark: '3',
        fetchedOffset: '0',
        messages: [0, 1, 2].map(message),
      },
      resolveOffset: (offset: string) => void resolved.push(offset),
      heartbeat: async () => undefined,
      isRunning: () => true,
      isStale: () => false,
    });
    const { rows } = await db.pool.query<{ next_offset: string }>(
      'SELECT next_offset FROM bus_group_offsets WHERE group_id = $1 AND topic = $2',
      [group, topic],
    );
    expect(rows.map((r) => Number(r.next_offset))).toEqual([5]);
    expect(seeks).toEqual([]);
  });
});
