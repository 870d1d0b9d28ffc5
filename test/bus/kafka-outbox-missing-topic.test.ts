import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import type { Subscription } from '../../shared/bus/port.js';
import { withTransaction } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { deleteTopic } from '../support/delete-topic.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { kafkaProblem, startKafka, type KafkaBroker } from '../support/kafka.js';
import { waitFor } from '../support/wait.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('Kafka outbox: a topic that does not exist', kafka.skipReason);

/**
 * A transactional publish to a topic the cluster does not have (deleted by an operator, never created: the
 * broker does not create topics on demand) commits an outbox row the broker can never take. It was the oldest
 * row of every relay round, so every later message, of every topic, waited behind it for good; on the postgres
 * log the same publish fails and rolls back. It is set aside in bus_outbox_refused now, and the rest goes on.
 * A dead-letter topic is created again from its source topic instead; when the source is gone too, that
 * creation failed for ever, and the dead letter held every later row the same way.
 */
describe.skipIf(kafka.skipReason)('Kafka outbox: a row for a topic that does not exist', () => {
  let db: TestDatabase;
  let bus: KafkaBus;
  const refused: string[] = [];
  const subs: Subscription[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
    bus = new KafkaBus({
      brokers: kafka.target!.brokers,
      clientId: 'outbox-missing-topic-test',
      log: createLogger({ level: 'silent' }),
      pool: db.pool,
      connectionString: db.url,
      publishTimeoutMs: 10_000,
      missingTopicGraceMs: 2_000,
      observer: {
        handled: () => undefined,
        failed: () => undefined,
        deadLettered: () => undefined,
        outboxRefused: (topic) => void refused.push(topic),
      },
    });
  });
  afterAll(async () => {
    await Promise.all(subs.map((s) => s.stop()));
    await bus?.close();
    await db?.drop();
  });

  it('is set aside; the messages published after it reach Kafka', async () => {
    const tag = randomBytes(4).toString('hex');
    const topic = `outbox-ok-${tag}`;
    const missing = `outbox-missing-${tag}`;
    await bus.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
    const seen: string[] = [];
    subs.push(
      await bus.subscribe({
        group: `g-${tag}`,
        topics: [topic],
        handler: async (m) => void seen.push(m.value),
      }),
    );
    await withTransaction(db.pool, (tx) => bus.publish(missing, [{ key: 'k', value: 'nowhere' }], { tx }));
    await withTransaction(db.pool, (tx) => bus.publish(topic, [{ key: 'k', value: 'after' }], { tx }));
    await waitFor(() => seen.includes('after'), 'the message published after it', 60_000);
    expect(refused).toEqual([missing]);
    const { rows } = await db.pool.query<{ topic: string; value: string; error: string }>(
      'SELECT topic, value, error FROM bus_outbox_refused',
    );
    expect(rows).toEqual([
      {
        topic: missing,
        value: 'nowhere',
        error: `UNKNOWN_TOPIC_OR_PARTITION: topic ${missing} does not exist on the cluster`,
      },
    ]);
  }, 120_000);

  it('a dead letter whose source topic is gone too is set aside; the messages published after it reach Kafka', async () => {
    // An operator deleted a topic and its dead-letter topic (to retire or clear them) while a dead letter of it
    // waited in the outbox (Kafka was away). The dead-letter topic cannot be created again (its source has no
    // partitions to copy), and dead-letter topics are never set aside: the row stays the oldest for ever.
    const tag = randomBytes(4).toString('hex');
    const topic = `outbox-ok2-${tag}`;
    const gone = `outbox-gone-${tag}`;
    await bus.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
    const seen: string[] = [];
    subs.push(
      await bus.subscribe({
        group: `g2-${tag}`,
        topics: [topic],
        handler: async (m) => void seen.push(m.value),
      }),
    );
    await withTransaction(db.pool, (tx) =>
      bus.publish(`${gone}.dlq`, [{ key: 'k', value: 'dead letter of a deleted topic' }], { tx }),
    );
    await withTransaction(db.pool, (tx) => bus.publish(topic, [{ key: 'k', value: 'after' }], { tx }));
    await waitFor(() => seen.includes('after'), 'the message published after it', 60_000);
  }, 120_000);
});

/**
 * A broker configured to create topics on demand (auto.create.topics.enable=true, Kafka's own default) made a
 * topic for any metadata request of our producer or consumers that named a missing one (kafkajs asks for it
 * unless told not to): a deleted topic came back with the broker's defaults (1 partition: per-key order across
 * the old partitions broken), and the outbox row for it was sent instead of set aside. Our clients never ask a
 * broker to create a topic.
 */
describe.skipIf(kafka.skipReason)(
  'Kafka outbox and consumers on a broker that creates topics on demand',
  () => {
    let db: TestDatabase;
    let broker: KafkaBroker | undefined;
    let bus: KafkaBus;
    const refused: string[] = [];
    const subs: Subscription[] = [];
    const topicsOnBroker = async () => {
      const admin = new Kafka({ brokers: broker!.brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        return await admin.listTopics();
      } finally {
        await admin.disconnect();
      }
    };
    beforeAll(async () => {
      db = await createTestDatabase();
      if (await kafkaProblem()) return;
      broker = await startKafka({ autoCreateTopics: true }); // its own: ours are configured without it
      bus = new KafkaBus({
        brokers: broker.brokers,
        clientId: 'outbox-auto-create-test',
        log: createLogger({ level: 'silent' }),
        pool: db.pool,
        connectionString: db.url,
        publishTimeoutMs: 10_000,
        missingTopicGraceMs: 2_000,
        metadataMaxAgeMs: 1_000,
        observer: {
          handled: () => undefined,
          failed: () => undefined,
          deadLettered: () => undefined,
          outboxRefused: (topic) => void refused.push(topic),
        },
      });
    }, 240_000);
    afterAll(async () => {
      await Promise.all(subs.map((s) => s.stop()));
      await bus?.close();
      await broker?.close();
      await db?.drop();
    }, 120_000);

    it('a row for a missing topic is set aside, and the topic is not created', async () => {
      if (!broker) return;
      const tag = randomBytes(4).toString('hex');
      const topic = `auto-ok-${tag}`;
      const missing = `auto-missing-${tag}`;
      await bus.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
      const seen: string[] = [];
      subs.push(
        await bus.subscribe({
          group: `g-${tag}`,
          topics: [topic],
          handler: async (m) => void seen.push(m.value),
        }),
      );
      await withTransaction(db.pool, (tx) => bus.publish(missing, [{ key: 'k', value: 'nowhere' }], { tx }));
      await withTransaction(db.pool, (tx) => bus.publish(topic, [{ key: 'k', value: 'after' }], { tx }));
      await waitFor(() => seen.includes('after'), 'the message published after it', 60_000);
      expect(await topicsOnBroker()).not.toContain(missing);
      expect(refused).toEqual([missing]);
    }, 120_000);

    it('a topic deleted under a running consumer is not created again by it', async () => {
      if (!broker) return;
      const tag = randomBytes(4).toString('hex');
      const topic = `auto-deleted-${tag}`;
      await bus.ensureTopics([{ name: topic, partitions: 3, retentionMs: null }]);
      subs.push(await bus.subscribe({ group: `g-${tag}`, topics: [topic], handler: async () => undefined }));
      await deleteTopic(broker.brokers, topic);
      // The consumer refreshes its metadata every second (metadataMaxAgeMs) and at each failed fetch.
      await new Promise((resolve) => setTimeout(resolve, 8_000));
      expect(await topicsOnBroker()).not.toContain(topic);
    }, 120_000);
  },
);
