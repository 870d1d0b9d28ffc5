import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import kafkajs, { Kafka, logLevel } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import type { BusMessage, OutgoingMessage } from '../../shared/bus/port.js';
import { withTransaction } from '../../shared/db/pool.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { waitFor } from '../support/wait.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('Kafka outbox refusals', kafka.skipReason);
const { ConfigResourceTypes } = kafkajs;

/** The topic's limit in this test: the broker's default (about 1 MiB) would do, only slower. */
const MAX_MESSAGE_BYTES = 20_000;

/**
 * A message the broker refuses for good (larger than the topic's max.message.bytes) must not block the outbox:
 * it is set aside in bus_outbox_refused (logged at error level, counted), and the messages after it, of every
 * topic, still reach Kafka.
 */
describe.skipIf(kafka.skipReason)('Kafka outbox: a message the broker refuses', () => {
  let db: TestDatabase;
  let bus: KafkaBus;
  const logLines: Array<{ level: number; msg: string; topic?: string; key?: string; err?: string }> = [];
  const refusedCounts = new Map<string, number>();

  beforeAll(async () => {
    db = await createTestDatabase();
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
        done();
      },
    });
    bus = new KafkaBus({
      brokers: kafka.target!.brokers,
      clientId: 'outbox-refused-test',
      log: pino({ level: 'warn' }, sink),
      pool: db.pool,
      connectionString: db.url,
      observer: {
        handled: () => undefined,
        failed: () => undefined,
        deadLettered: () => undefined,
        outboxRefused: (topic) => refusedCounts.set(topic, (refusedCounts.get(topic) ?? 0) + 1),
      },
    });
  });
  afterAll(async () => {
    await bus?.close();
    await db?.drop();
  });

  /** Sets the topic's max.message.bytes; KRaft applies a config change a moment after it was accepted. */
  async function limitTopic(topic: string): Promise<void> {
    const admin = new Kafka({ brokers: kafka.target!.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      await admin.alterConfigs({
        validateOnly: false,
        resources: [
          {
            type: ConfigResourceTypes.TOPIC,
            name: topic,
            configEntries: [
              { name: 'retention.ms', value: '-1' },
              { name: 'max.message.bytes', value: String(MAX_MESSAGE_BYTES) },
            ],
          },
        ],
      });
      const limit = async () => {
        const { resources } = await admin.describeConfigs({
          includeSynonyms: false,
          resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
        });
        return resources[0]!.configEntries.find((e) => e.configName === 'max.message.bytes')?.configValue;
      };
      await waitFor(async () => (await limit()) === String(MAX_MESSAGE_BYTES), 'the topic limit', 15_000);
    } finally {
      await admin.disconnect();
    }
  }

  it('sets the refused message aside and sends the messages after it, of every topic', async () => {
    const suffix = randomBytes(4).toString('hex');
    const limited = `refused-${suffix}`;
    const other = `other-${suffix}`;
    await bus.ensureTopics([
      { name: limited, partitions: 3, retentionMs: null },
      { name: other, partitions: 1, retentionMs: null },
    ]);
    await limitTopic(limited);

    const message = (key: string, value: string): OutgoingMessage => ({ key, value, headers: { k: key } });
    const big = message('big', 'x'.repeat(MAX_MESSAGE_BYTES * 2));
    const before = ['a', 'b', 'c'].map((k) => message(k, `before-${k}`));
    const after = ['a', 'b', 'c', 'big'].map((k) => message(k, `after-${k}`));
    // One transaction, so the rows are relayed together: the big one in the middle of a batch.
    await withTransaction(db.pool, async (tx) => {
      await bus.publishMany(
        [
          { topic: limited, messages: [...before, big, ...after] },
          { topic: other, messages: [message('o', 'other-after')] },
        ],
        { tx },
      );
    });

    const received: BusMessage[] = [];
    const subscription = await bus.subscribe({
      group: `g-${suffix}`,
      topics: [limited, other],
      handler: async (m) => void received.push(m),
    });
    try {
      // At least once: a refused request may have been written on its other partitions, and is sent again
      // (consumers dedupe by envelope id). Each value counts at its first delivery.
      const distinct = () => [...new Map(received.map((m) => [`${m.topic}/${m.value}`, m])).values()];
      await waitFor(() => distinct().length >= 8, 'the messages after the refused one', 30_000);
      const values = (topic: string, key?: string) =>
        distinct()
          .filter((m) => m.topic === topic && (key === undefined || m.key === key))
          .map((m) => m.value);
      expect(values(limited).sort()).toEqual([...before, ...after].map((m) => m.value).sort());
      expect(values(other)).toEqual(['other-after']);
      // Per key in publish order; the big key goes on without its refused message.
      for (const k of ['a', 'b', 'c']) expect(values(limited, k)).toEqual([`before-${k}`, `after-${k}`]);
      expect(values(limited, 'big')).toEqual(['after-big']);
    } finally {
      await subscription.stop();
    }

    // Kept for the operator, whole, with the broker's reason; counted and logged at error level.
    const { rows } = await db.pool.query<{ topic: string; key: string; value: string; error: string }>(
      'SELECT topic, key, value, error FROM bus_outbox_refused',
    );
    expect(rows).toEqual([
      { topic: limited, key: 'big', value: big.value, error: expect.stringMatching(/^MESSAGE_TOO_LARGE: /) },
    ]);
    expect((await db.pool.query('SELECT count(*)::int AS n FROM bus_outbox')).rows[0].n).toBe(0);
    expect(Object.fromEntries(refusedCounts)).toEqual({ [limited]: 1 });
    const errors = logLines.filter((l) => l.level === 50);
    expect(errors).toEqual([
      expect.objectContaining({
        topic: limited,
        key: 'big',
        msg: expect.stringContaining('bus_outbox_refused'),
      }),
    ]);
  });
});
