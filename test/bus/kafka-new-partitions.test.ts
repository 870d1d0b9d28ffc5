import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import { deadLetterTopic, type BusMessage } from '../../shared/bus/port.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { waitFor } from '../support/wait.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('Kafka partitions added at runtime', kafka.skipReason);

/**
 * Partitions added to a topic while a group runs (ensureTopics with more partitions) have no stored position
 * (subscribe() created those of the partitions there were): the member they are assigned to creates it and
 * reads them from their start.
 */
describe.skipIf(kafka.skipReason)('Kafka partitions added while a group runs', () => {
  let db: TestDatabase;
  const buses: KafkaBus[] = [];
  const make = () => {
    const bus = new KafkaBus({
      brokers: kafka.target!.brokers,
      clientId: 'new-partitions-test',
      log: createLogger({ level: 'silent' }),
      pool: db.pool,
      connectionString: db.url,
      // The member sees the new partitions within a second (the default is 5 minutes).
      metadataMaxAgeMs: 1_000,
    });
    buses.push(bus);
    return bus;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(buses.map((b) => b.close()));
    await db?.drop();
  });

  it('consumes the new partitions from their start', async () => {
    const topic = `grow-${randomBytes(4).toString('hex')}`;
    const group = `g-${topic}`;
    const bus = make();
    await bus.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
    const received: BusMessage[] = [];
    const subscription = await bus.subscribe({
      group,
      topics: [topic],
      handler: async (m) => void received.push(m),
    });
    try {
      await bus.publish(topic, [{ key: 'k', value: 'p0-0' }]);
      await waitFor(() => received.length === 1, 'the first message');

      // A later start with more partitions configured (another process, as on a deploy).
      await make().ensureTopics([{ name: topic, partitions: 3, retentionMs: null }]);
      // Idempotent: a send retried while the new partitions elect their leaders is not written twice (CI once
      // saw p2-1 and p2-3 at offsets 0-1 and again at 2-3 with a plain producer).
      const producer = new Kafka({ brokers: kafka.target!.brokers, logLevel: logLevel.NOTHING }).producer({
        idempotent: true,
        maxInFlightRequests: 1,
      });
      await producer.connect();
      try {
        await producer.send({
          topic,
          messages: [1, 2, 1, 2].map((partition, i) => ({
            partition,
            key: `k${i}`,
            value: `p${partition}-${i}`,
          })),
        });
      } finally {
        await producer.disconnect();
      }

      await waitFor(() => received.length >= 5, 'the messages of the new partitions', 30_000);
      expect(received.map((m) => `${m.partition}:${m.offset}:${m.value}`).sort()).toEqual([
        '0:0:p0-0',
        '1:0:p1-0',
        '1:1:p1-2',
        '2:0:p2-1',
        '2:1:p2-3',
      ]);
      // Their positions are stored, committed past what was handled (the handler saw the last message a moment
      // before its position was committed: polled, as a fresh-clone run once read it in between).
      const positions = async () =>
        (
          await db.pool.query<{ partition: number; next_offset: string }>(
            'SELECT partition, next_offset FROM bus_group_offsets WHERE group_id = $1 ORDER BY partition',
            [group],
          )
        ).rows;
      // expect.poll gives up after 1 s by default: the deadline of waitFor, for a commit on a loaded machine.
      await expect.poll(positions, { timeout: 30_000 }).toEqual([
        { partition: 0, next_offset: '1' },
        { partition: 1, next_offset: '2' },
        { partition: 2, next_offset: '2' },
      ]);
    } finally {
      await subscription.stop();
    }
  });

  it('never grows a topic whose partitions are fixed (chain.events, chain.heights), nor its dead-letter topic', async () => {
    const topic = `fixed-${randomBytes(4).toString('hex')}`;
    await make().ensureTopics([{ name: topic, partitions: 1, retentionMs: null, fixedPartitions: true }]);
    // A later start with more partitions configured (bus.partitions raised).
    await make().ensureTopics([{ name: topic, partitions: 3, retentionMs: null, fixedPartitions: true }]);
    const admin = new Kafka({ brokers: kafka.target!.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [topic, deadLetterTopic(topic)] });
      expect(topics.map((t) => [t.name, t.partitions.length]).sort()).toEqual(
        [
          [topic, 1],
          [deadLetterTopic(topic), 1],
        ].sort(),
      );
    } finally {
      await admin.disconnect();
    }
  });
});
