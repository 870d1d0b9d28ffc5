import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import type { Subscription } from '../../shared/bus/port.js';
import { withTransaction } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { waitFor } from '../support/wait.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('Kafka outbox: a dead letter whose topics are gone', kafka.skipReason);

/**
 * Dead-letter topics are never set aside by the outbox relay (KafkaBus.missingTopics leaves them out): a send
 * that meets one missing creates it again from its source topic's partitions. When the source topic is gone
 * too, that creation fails, the row stays the oldest of every relay round, and every later message, of every
 * topic, waits behind it for good — the outage bus_outbox_refused exists to avoid.
 */
describe.skipIf(kafka.skipReason)('Kafka outbox: a dead letter whose topics are gone', () => {
  let db: TestDatabase;
  let bus: KafkaBus;
  const refused: string[] = [];
  const subs: Subscription[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
    bus = new KafkaBus({
      brokers: kafka.target!.brokers,
      clientId: 'outbox-gone-dlq-test',
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
