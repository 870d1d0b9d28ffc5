import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../shared/db/pool.js';
import {
  DLQ_HEADERS,
  PoisonMessageError,
  REDRIVEN_FROM_HEADER,
  deadLetterCounts,
  deadLetterTopic,
  redriveDeadLetters,
  type BusMessage,
  type Subscription,
} from '../../shared/bus/index.js';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import { KafkaNames } from '../../shared/bus/kafka/names.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { waitFor } from '../support/wait.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('Kafka topic prefix', kafka.skipReason);

describe('KafkaNames', () => {
  it('maps logical names to the broker and back; other prefixes are not this bus’s', () => {
    const names = new KafkaNames('staging.');
    expect(names.toKafka('chain.events')).toBe('staging.chain.events');
    expect(names.fromKafka('staging.chain.events.dlq')).toBe('chain.events.dlq');
    expect(names.fromKafka('prod.chain.events')).toBeUndefined();
    expect(names.logicalTopics(['staging.a', 'prod.a', 'a', 'staging.a.dlq'])).toEqual(['a', 'a.dlq']);
    expect(names.groupId('relay')).toBe('staging.relay');
    expect(names.logFields('a')).toEqual({ topic: 'a', kafkaTopic: 'staging.a' });
    const none = new KafkaNames();
    expect(none.toKafka('a')).toBe('a');
    expect(none.logicalTopics(['a', 'b.c'])).toEqual(['a', 'b.c']);
    expect(none.groupId('g')).toBe('g');
    expect(none.logFields('a')).toEqual({ topic: 'a' });
    expect(() => new KafkaNames('a b')).toThrow(/prefix/);
    expect(() => new KafkaNames('x'.repeat(101))).toThrow(/prefix/);
  });
});

/**
 * Deployments sharing one cluster (each with its own PostgreSQL, where positions and the outbox live) under
 * different prefixes, and one without: the same logical topic and group name, and each sees only its own.
 */
describe.skipIf(kafka.skipReason)('Kafka topic prefix: deployments sharing a cluster', () => {
  const id = randomBytes(4).toString('hex');
  const topic = `shared-${id}`;
  const group = `group-${id}`;
  const labels = ['a', 'b', 'bare'] as const;
  const prefixes = { a: `pa-${id}.`, b: `pb-${id}.`, bare: '' };
  const deployments = new Map<string, { bus: KafkaBus; db: TestDatabase }>();
  const subscriptions: Subscription[] = [];
  const of = (label: string) => deployments.get(label)!;
  /** Whether the groups of the first test handle the poison message by now. */
  let fixed = false;
  /** What each deployment's group (the same name everywhere) handled. */
  const handled = new Map<string, BusMessage[]>();

  beforeAll(async () => {
    for (const label of labels) {
      const db = await createTestDatabase();
      const bus = new KafkaBus({
        brokers: kafka.target!.brokers,
        clientId: `prefix-${label}`,
        log: createLogger({ level: 'silent' }),
        pool: db.pool,
        connectionString: db.url,
        publishTimeoutMs: 10_000,
        positionCheckMs: 200,
        ...(prefixes[label] && { topicPrefix: prefixes[label] }),
      });
      deployments.set(label, { bus, db });
      await bus.ensureTopics([{ name: topic, partitions: 2, retentionMs: null }]);
    }
  });
  afterAll(async () => {
    await Promise.all(subscriptions.map((s) => s.stop()));
    for (const { bus, db } of deployments.values()) {
      await bus.close();
      await db.drop();
    }
  });

  async function collect(label: string, topics: string[], groupName: string, fail?: (m: BusMessage) => void) {
    const seen: BusMessage[] = [];
    const sub = await of(label).bus.subscribe({
      group: groupName,
      topics,
      maxAttempts: 1,
      handler: async (m) => {
        fail?.(m);
        seen.push(m);
      },
    });
    subscriptions.push(sub);
    return seen;
  }

  const valuesOf = (seen: BusMessage[]) => seen.map((m) => m.value).sort();
  const published = (label: string) =>
    [...Array.from({ length: 4 }, (_, i) => `${label}-${i}`), `${label}-tx`, `${label}-poison`].sort();

  it('each publishes and consumes the same logical topic and group, and sees only its own messages', async () => {
    for (const label of labels) {
      const { bus, db } = of(label);
      // At once and through the outbox (a transaction).
      await bus.publish(
        topic,
        Array.from({ length: 4 }, (_, i) => ({ key: `k${i}`, value: `${label}-${i}` })),
      );
      await withTransaction(db.pool, (tx) =>
        bus.publish(
          topic,
          [
            { key: 'k0', value: `${label}-tx` },
            { key: 'k1', value: `${label}-poison` },
          ],
          { tx },
        ),
      );
      handled.set(
        label,
        await collect(label, [topic], group, (m) => {
          if (!fixed && m.value.endsWith('-poison')) throw new PoisonMessageError('poison');
        }),
      );
    }
    await waitFor(
      () => labels.every((l) => handled.get(l)!.length >= 5),
      'each deployment handled its messages',
    );
    await new Promise((r) => setTimeout(r, 1_000)); // anything of another deployment would come by now
    for (const label of labels) {
      const mine = handled.get(label)!;
      expect(valuesOf(mine)).toEqual(published(label).filter((v) => !v.endsWith('-poison')));
      // Logical names outside the adapter.
      expect(new Set(mine.map((m) => m.topic))).toEqual(new Set([topic]));
    }

    // On the broker: the prefixed names, topics and groups, and the bare ones of the unprefixed bus.
    const admin = new Kafka({ brokers: kafka.target!.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const topics = await admin.listTopics();
      for (const label of labels) {
        expect(topics).toContain(`${prefixes[label]}${topic}`);
        expect(topics).toContain(`${prefixes[label]}${topic}.dlq`);
      }
      const { groups } = await admin.listGroups();
      const ids = groups.map((g) => g.groupId);
      for (const label of labels) expect(ids).toContain(`${prefixes[label]}${group}`);
      // The messages on the prefixed topic are that deployment's only.
      const ends = await admin.fetchTopicOffsets(`${prefixes.a}${topic}`);
      expect(ends.reduce((n, e) => n + Number(e.high), 0)).toBe(6);
    } finally {
      await admin.disconnect();
    }
  });

  it('dead letters, lag, seek and redrive under a prefix: logical names in headers, positions and reports', async () => {
    const { bus, db } = of('a');
    const dlq = deadLetterTopic(topic);
    // The poison message of the first test, dead-lettered into a's dead-letter topic only.
    const dead = await collect('a', [dlq], `dlq-${id}`);
    await waitFor(() => dead.length >= 1, 'the dead letter');
    await new Promise((r) => setTimeout(r, 500));
    expect(dead.map((m) => m.value)).toEqual(['a-poison']);
    expect(dead[0]!.topic).toBe(dlq);
    expect(dead[0]!.headers[DLQ_HEADERS.topic]).toBe(topic);
    expect(dead[0]!.headers[DLQ_HEADERS.group]).toBe(group);
    expect(await deadLetterCounts(bus, topic)).toEqual({ topic, deadLetters: 1n, notRedriven: 1n });

    // Lag: logical topics, this deployment's log only; another prefix's topic is none of this bus's.
    await waitFor(
      async () => (await bus.lag(group, [topic])).every((p) => p.lag === 0n),
      'the group at the end',
    );
    const lag = await bus.lag(group, [topic, dlq, `${prefixes.b}${topic}`]);
    expect(lag.map((p) => p.topic).sort()).toEqual([topic, topic, dlq, dlq].sort());
    expect(lag.filter((p) => p.topic === topic).reduce((n, p) => n + p.end, 0n)).toBe(6n);
    // Positions stored under the logical names.
    const { rows } = await db.pool.query<{ topic: string }>(
      'SELECT DISTINCT topic FROM bus_group_offsets WHERE group_id = $1',
      [group],
    );
    expect(rows.map((r) => r.topic)).toEqual([topic]);

    // Seek back to the beginning with a running member: it reads its own log again.
    const again = await collect('a', [topic], `seek-${id}`);
    await waitFor(() => again.length >= 6, 'the second group read everything');
    await bus.seek(`seek-${id}`, topic, { to: 'beginning' });
    await waitFor(() => again.length >= 12, 'read again after the seek');
    expect(new Set(again.map((m) => m.value))).toEqual(new Set(published('a')));

    // Redrive: back to a's own topic, with the logical dead-letter name in its origin header.
    const redriven = await collect('a', [topic], `after-${id}`);
    await waitFor(() => redriven.length >= 6, 'the third group read everything');
    fixed = true; // the failed group takes the dead letter now (else it dead-letters the copy again)
    expect(await redriveDeadLetters({ bus, pool: db.pool, topic, pollMs: 50 })).toEqual({
      topic,
      redriven: 1,
      refused: 0,
      failed: 0,
    });
    await waitFor(() => redriven.length >= 7, 'the redriven message');
    const copy = redriven.find((m) => m.headers[REDRIVEN_FROM_HEADER] !== undefined)!;
    expect(copy.value).toBe('a-poison');
    expect(copy.headers[REDRIVEN_FROM_HEADER]).toMatch(
      new RegExp(`^${dlq.replaceAll('.', '\\.')}/\\d+/\\d+$`),
    );
    // The group that failed took it, from a's topic only.
    await waitFor(() => handled.get('a')!.length >= 6, "a's group took the redriven message");
    expect(handled.get('a')!.at(-1)!.value).toBe('a-poison');
    expect(handled.get('b')!.length).toBe(5);
    expect(handled.get('bare')!.length).toBe(5);
    // The others' logs did not get it.
    for (const label of ['b', 'bare']) {
      const ends = await of(label).bus.lag(group, [topic]);
      expect(ends.reduce((n, p) => n + p.end, 0n)).toBe(6n);
    }
  });
});
