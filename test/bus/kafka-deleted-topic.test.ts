import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { deleteTopic } from '../support/delete-topic.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { waitFor } from '../support/wait.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('Kafka topic deleted under a running bus', kafka.skipReason);

/**
 * kafkajs keeps every topic its producer or admin ever used in the metadata it refreshes: once an operator
 * deletes one (a dead-letter topic, to clear it), every later call failed, whatever topic it was for, until
 * the process restarted. The bus replaces the client that failed so.
 */
describe.skipIf(kafka.skipReason)('Kafka topic deleted under a running bus', () => {
  let db: TestDatabase;
  let bus: KafkaBus;

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = new KafkaBus({
      brokers: kafka.target!.brokers,
      clientId: 'deleted-topic-test',
      log: createLogger({ level: 'silent' }),
      pool: db.pool,
      connectionString: db.url,
    });
  });
  afterAll(async () => {
    await bus?.close();
    await db?.drop();
  });

  it('publishes to other topics and manages topics again after one it used was deleted', async () => {
    const suffix = randomBytes(4).toString('hex');
    const [deleted, other, later] = ['deleted', 'other', 'later'].map((t) => `${t}-${suffix}`) as [
      string,
      string,
      string,
    ];
    await bus.ensureTopics([
      { name: deleted, partitions: 1, retentionMs: null },
      { name: other, partitions: 1, retentionMs: null },
    ]);
    await bus.publish(deleted, [{ key: 'k', value: 'before' }]);

    await deleteTopic(kafka.target!.brokers, deleted);

    // A publish to a topic the producer did not use yet goes through, at the latest when sent again (as the
    // outbox relay does).
    let sent = false;
    for (let attempt = 0; attempt < 3 && !sent; attempt++)
      sent = await bus.publish(other, [{ key: 'k', value: 'after' }]).then(
        () => true,
        () => false,
      );
    expect(sent).toBe(true);
    // And topics are managed again.
    await bus.ensureTopics([{ name: later, partitions: 1, retentionMs: null }]);
    expect(await bus.lag(`g-${later}`, [later])).toHaveLength(1);
  });

  it('many admin calls meeting the deleted topic at once replace the admin once, and all of them answer', async () => {
    const suffix = randomBytes(4).toString('hex');
    const [gone, kept] = [`gone-${suffix}`, `kept-${suffix}`];
    await bus.ensureTopics([
      { name: gone, partitions: 1, retentionMs: null },
      { name: kept, partitions: 2, retentionMs: null },
    ]);
    expect(await bus.lowWatermark(gone, 0)).toBe(0n); // the admin knows it now
    await deleteTopic(kafka.target!.brokers, gone);
    // Each replacing the admin on its own disconnected the one the others had just made, under their calls.
    const answers = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        i % 2 === 0 ? bus.lowWatermark(kept, i % 2) : bus.lag(`g-${kept}`, [kept, gone]),
      ),
    );
    expect(answers.filter((a) => a.status === 'rejected')).toEqual([]);
    // A topic that no longer exists has no partitions to lag on, as on the postgres log.
    expect((await bus.lag(`g-${kept}`, [gone, kept])).map((l) => l.topic)).toEqual([kept, kept]);
  });

  it("a group's stored position past the end of a topic created again lags by all the topic holds", async () => {
    // An operator clears a dead-letter topic (deletes it; it is created again, Kafka counts from 0), whose
    // redrive group had committed 3. The group reads the new log from its start (positionBeyondEnd), so lag
    // must say so: reported as 0, the notifier's dead-letter watch took the new dead letters of a deeper
    // level for ones a redrive had sent back (never told), and `dead-letters redrive` found nothing to do.
    const topic = `cleared-${randomBytes(4).toString('hex')}.dlq`;
    const group = `redrive:${topic}`;
    await bus.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
    await bus.publish(
      topic,
      ['a', 'b', 'c'].map((value) => ({ key: 'k', value })),
    );
    await bus.seek(group, topic, { to: 'end' });
    expect(await bus.lag(group, [topic])).toMatchObject([{ partition: 0, lag: 0n }]);

    await deleteTopic(kafka.target!.brokers, topic);
    await bus.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
    let sent = false;
    for (let attempt = 0; attempt < 3 && !sent; attempt++)
      sent = await bus
        .publish(topic, [
          { key: 'k', value: 'new 1' },
          { key: 'k', value: 'new 2' },
        ])
        .then(
          () => true,
          () => false,
        );
    expect(sent).toBe(true);

    expect(await bus.lag(group, [topic])).toMatchObject([{ partition: 0, lag: 2n }]);
  });

  it('a dead letter for a dead-letter topic an operator deleted is sent once the topic is created again', async () => {
    const topic = `poisoned-${randomBytes(4).toString('hex')}`;
    await bus.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
    const failing = await bus.subscribe({
      group: `g-${topic}`,
      topics: [topic],
      maxAttempts: 1,
      handler: async () => {
        throw new Error('poison');
      },
    });
    const dead: string[] = [];
    try {
      await deleteTopic(kafka.target!.brokers, `${topic}.dlq`);
      await bus.publish(topic, [{ key: 'k', value: 'poison' }]);
      // The dead letter goes through the outbox: its send fails once, the topic is created again, it goes.
      await waitFor(
        async () =>
          Number((await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM bus_outbox')).rows[0]!.n) ===
            0 &&
          Number(
            (
              await db.pool.query<{ n: string }>(
                'SELECT count(*) AS n FROM bus_group_offsets WHERE topic = $1 AND next_offset = 1',
                [topic],
              )
            ).rows[0]!.n,
          ) === 1,
        'the dead letter sent',
        30_000,
      );
      const reader = await bus.subscribe({
        group: `g-${topic}-dlq`,
        topics: [`${topic}.dlq`],
        handler: async (m) => void dead.push(m.value),
      });
      try {
        await waitFor(() => dead.length === 1, 'the dead letter read', 20_000);
        expect(dead).toEqual(['poison']);
      } finally {
        await reader.stop();
      }
    } finally {
      await failing.stop();
    }
  });
});
