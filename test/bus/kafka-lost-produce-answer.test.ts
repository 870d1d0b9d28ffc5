import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import type { Subscription } from '../../shared/bus/port.js';
import { withTransaction } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logging/logger.js';
import { freePort } from '../../shared/net/free-port.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { kafkaProblem, startKafka, type KafkaBroker } from '../support/kafka.js';
import { startKafkaProxy, type KafkaProxy } from '../support/kafka-proxy.js';
import { waitFor } from '../support/wait.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('Kafka: a produce request whose answer is lost', kafka.skipReason);

/**
 * A produce request the broker wrote but whose answer never came (a timeout) leaves the idempotent
 * producer's sequence state unknown: the producer was kept, and the outbox's retry went out on it, queued
 * behind the unanswered request until kafkajs's request timeout (30 s) and then sent with sequence numbers the
 * broker may take for a duplicate or out of order. The producer is replaced after such a failure: the retry
 * goes out at once under a new producer id (what was written may be there twice: consumers dedupe by envelope
 * id).
 */
describe.skipIf(kafka.skipReason)('Kafka: a produce request whose answer is lost', () => {
  let db: TestDatabase;
  let broker: KafkaBroker | undefined;
  let proxy: KafkaProxy;
  let bus: KafkaBus;
  const subs: Subscription[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    if (await kafkaProblem()) return;
    const [port, proxyPort] = [await freePort(), await freePort()];
    proxy = await startKafkaProxy({ port: proxyPort, target: port });
    // Its own broker, which sends every client through the proxy.
    broker = await startKafka({ port, advertisedPort: proxyPort });
    bus = new KafkaBus({
      brokers: [`127.0.0.1:${proxyPort}`],
      clientId: 'lost-produce-answer-test',
      log: createLogger({ level: 'silent' }),
      pool: db.pool,
      connectionString: db.url,
      publishTimeoutMs: 2_000,
    });
  }, 240_000);
  afterAll(async () => {
    await Promise.all(subs.map((s) => s.stop()));
    await bus?.close();
    await proxy?.close();
    await broker?.close();
    await db?.drop();
  }, 120_000);

  it('the outbox sends again at once on a new producer, and goes on', async () => {
    if (!broker) return;
    const tag = randomBytes(4).toString('hex');
    const topic = `lost-answer-${tag}`;
    await bus.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
    const seen: string[] = [];
    subs.push(
      await bus.subscribe({
        group: `g-${tag}`,
        topics: [topic],
        handler: async (m) => void seen.push(m.value),
      }),
    );
    const publish = (value: string) =>
      withTransaction(db.pool, (tx) => bus.publish(topic, [{ key: 'k', value }], { tx }));
    await publish('before');
    await waitFor(() => seen.includes('before'), 'the first message', 30_000);

    proxy.dropProduceAnswers(1);
    await publish('answer lost');
    // The broker wrote it (the consumer may see it at once); its answer never came.
    await waitFor(() => proxy.dropped() === 1, 'the answer dropped', 30_000);
    await publish('after');
    // publishTimeoutMs (2 s), the relay's back-off, a new producer's connect: the outbox is empty well within
    // 15 s. Kept, the old producer's retry waited for its unanswered request first (kafkajs's request
    // timeout, 30 s).
    const outboxRows = async () => (await db.pool.query('SELECT 1 FROM bus_outbox')).rowCount;
    await waitFor(
      async () => (await outboxRows()) === 0 && seen.includes('after'),
      'the outbox sent on after the lost answer',
      15_000,
    );
    // Written by the unanswered request and sent again: at least once, in order.
    expect(seen.filter((v) => v === 'answer lost').length).toBeGreaterThanOrEqual(1);
    expect(seen.indexOf('answer lost')).toBeLessThan(seen.indexOf('after'));
  }, 120_000);

  it('producers replaced after lost answers are disconnected: their connections do not pile up', async () => {
    if (!broker) return;
    const tag = randomBytes(4).toString('hex');
    const topic = `lost-answers-${tag}`;
    await bus.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
    const publish = (value: string) =>
      withTransaction(db.pool, (tx) => bus.publish(topic, [{ key: 'k', value }], { tx }));
    const outboxEmpty = async () => (await db.pool.query('SELECT 1 FROM bus_outbox')).rowCount === 0;
    await publish('first');
    await waitFor(outboxEmpty, 'the first message sent', 30_000);
    const before = proxy.connections();
    // Three failed sends in a row, each replacing the producer.
    for (let i = 0; i < 3; i++) {
      const dropped = proxy.dropped();
      proxy.dropProduceAnswers(1);
      await publish(`lost ${i}`);
      await waitFor(() => proxy.dropped() === dropped + 1, 'the answer dropped', 30_000);
      await waitFor(outboxEmpty, 'sent again on a new producer', 30_000);
    }
    // Each one's send timed out on our side, and goes on in kafkajs until its request times out (30 s);
    // disconnected under it, kafkajs connected it again and it stayed connected (before: 2 connections, then 5
    // for good). Once those sends are over, only the current producer's and the admin's are left.
    await waitFor(() => proxy.connections() <= before, 'the replaced producers disconnected', 75_000);
  }, 180_000);
});
