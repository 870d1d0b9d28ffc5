import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusMessage, EventBus } from '../../shared/bus/port.js';
import { DLQ_HEADERS, deadLetterTopic } from '../../shared/bus/port.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import { applyOnce } from '../../shared/bus/apply-once.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { spawnTs, type Spawned } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const MESSAGES = 10_000;
const KEYS = 16;
const KILLS = 4;

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('crash tests on kafka', kafka.skipReason);

/**
 * Acceptance of both buses: 10,000 messages over 16 keys while the consumer process is killed hard (SIGKILL,
 * no graceful stop) at random points: every message is handled, per-key order holds, effects are exactly
 * once (counted rows), and a replay from the beginning into a fresh projection gives the same result. And a
 * message whose handling kills the process goes to the dead-letter topic once its attempts, counted across
 * restarts, are spent.
 */
describe.each([
  { bus: 'postgres' as const, batch: undefined, skip: undefined },
  { bus: 'postgres' as const, batch: '50', skip: undefined },
  { bus: 'kafka' as const, batch: undefined, skip: kafka.skipReason },
  { bus: 'kafka' as const, batch: '50', skip: kafka.skipReason },
])('$bus bus under hard kills (batches of $batch)', ({ bus: kind, batch, skip }) => {
  let db: TestDatabase;
  let bus: EventBus;
  const topic = 'crash.test';
  const log = createLogger({ level: 'silent' });

  beforeAll(async () => {
    if (skip) return;
    db = await createTestDatabase();
    bus =
      kind === 'kafka'
        ? new KafkaBus({
            brokers: kafka.target!.brokers,
            clientId: 'crash-test',
            log,
            pool: db.pool,
            connectionString: db.url,
          })
        : new PostgresBus({ pool: db.pool, connectionString: db.url, log, rebalanceMs: 200 });
    // A topic name of its own per database: the Kafka broker is shared by the run.
    await bus.ensureTopics([{ name: topicName(), partitions: 8, retentionMs: null }]);
    await bus.ensureTopics([{ name: `${topicName()}.poison`, partitions: 2, retentionMs: null }]);
    for (const table of ['projection', 'replay', 'poison']) {
      await db.pool.query(
        `CREATE TABLE ${table} (id bigserial PRIMARY KEY, key text NOT NULL, seq int NOT NULL, event_id text NOT NULL)`,
      );
    }
  });
  afterAll(async () => {
    await bus?.close();
    await db?.drop();
  });

  const topicName = () => `${topic}.${db.url.split('/').pop()!}`;
  // Kafka's groups are shared by the run's databases too.
  const groupName = (label: string) => `${label}.${db.url.split('/').pop()!}`;
  const count = async (table: string) =>
    Number((await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);

  function startConsumer(env: Record<string, string>): Spawned {
    return spawnTs('test/support/crash-consumer.ts', [], {
      ...process.env,
      BUS: kind,
      DB_URL: db.url,
      KAFKA_BROKERS: kafka.target?.brokers.join(',') ?? '',
      ...(batch ? { BATCH: batch } : {}),
      ...env,
    });
  }

  it.skipIf(skip)(
    'handles every message exactly once, in per-key order, across SIGKILLs, and replays identically',
    async () => {
      const name = topicName();
      const consumerEnv = { TOPIC: name, GROUP: groupName('crash-group'), TABLE: 'projection' };
      // A live producer: each consumer's share is published while it runs (batches of 100, paced), the last
      // share after the last kill, so that every kill lands with messages still coming.
      const next = new Array<number>(KEYS).fill(0);
      let sent = 0;
      const publishShare = async (until: number) => {
        for (; sent < until; sent += 100) {
          const batch = Array.from({ length: 100 }, (_, i) => {
            const k = (sent + i) % KEYS;
            const seq = next[k]!++;
            const id = `m-${k}-${seq}`;
            return { key: `key-${k}`, value: JSON.stringify({ id, key: `key-${k}`, seq }) };
          });
          await bus.publish(name, batch);
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      const share = MESSAGES / (KILLS + 1);

      const kills: Array<{ afterMs: number; handledBefore: number }> = [];
      for (let i = 0; i < KILLS; i++) {
        const consumer = startConsumer(consumerEnv);
        await consumer.waitFor(/consumer ready/, 60_000);
        const publishing = publishShare(share * (i + 1));
        const afterMs = 300 + Math.floor(Math.random() * 900);
        await new Promise((r) => setTimeout(r, afterMs));
        consumer.child.kill('SIGKILL');
        await consumer.exited;
        await publishing;
        kills.push({ afterMs, handledBefore: await count('projection') });
      }
      await publishShare(MESSAGES);
      // At least three kills landed mid-stream, with work still pending.
      expect(kills.filter((k) => k.handledBefore < MESSAGES).length).toBeGreaterThanOrEqual(3);

      const last = startConsumer(consumerEnv);
      try {
        await waitFor(async () => (await count('projection')) >= MESSAGES, `${MESSAGES} rows`, 180_000);
        await waitFor(
          async () => (await bus.lag(groupName('crash-group'), [name])).every((p) => p.lag === 0n),
          'consumer lag 0',
          30_000,
        );
      } finally {
        last.child.kill('SIGKILL');
        await last.exited;
      }

      // Exactly once: one row per message, no duplicates.
      const totals = await db.pool.query<{ n: string; d: string }>(
        'SELECT count(*) AS n, count(DISTINCT event_id) AS d FROM projection',
      );
      expect(Number(totals.rows[0]!.n)).toBe(MESSAGES);
      expect(Number(totals.rows[0]!.d)).toBe(MESSAGES);

      // Per-key order: in the order rows were written, each key's seq runs 0, 1, 2, … with no gap.
      const sequences = await sequencesByKey('projection');
      expect(sequences.size).toBe(KEYS);
      for (const seqs of sequences.values()) expect(seqs).toEqual(seqs.map((_, i) => i));

      // Replay from the beginning into a fresh projection (new group, in this process): the same result.
      const replayed = await bus.subscribe({
        group: groupName('replay-group'),
        topics: [name],
        startFrom: 'earliest',
        handler: async (message, context) => {
          const { id, key, seq } = JSON.parse(message.value) as { id: string; key: string; seq: number };
          await applyOnce(db.pool, 'projection:replay', id, context, async (tx) => {
            await tx.query('INSERT INTO replay (key, seq, event_id) VALUES ($1, $2, $3)', [key, seq, id]);
          });
        },
      });
      await waitFor(async () => (await count('replay')) >= MESSAGES, 'replay complete', 180_000);
      await replayed.stop();
      expect(await count('replay')).toBe(MESSAGES);
      expect(await sequencesByKey('replay')).toEqual(sequences);
    },
    420_000,
  );

  it.skipIf(skip)(
    'a message that kills the consumer is dead-lettered once its attempts across restarts are spent',
    async () => {
      const name = `${topicName()}.poison`;
      const messages = Array.from({ length: 20 }, (_, seq) => {
        const id = `p-${seq}`;
        return { key: 'one-key', value: JSON.stringify({ id, key: 'one-key', seq }) };
      });
      await bus.publish(name, messages);
      const dead: BusMessage[] = [];
      const dlq = await bus.subscribe({
        group: groupName('poison-dlq'),
        topics: [deadLetterTopic(name)],
        handler: async (m) => void dead.push(m),
      });
      const env = {
        TOPIC: name,
        GROUP: groupName('poison-group'),
        TABLE: 'poison',
        CRASH_ON: 'p-7',
        MAX_ATTEMPTS: '2',
      };
      // Two runs die on p-7 (attempts 1 and 2); the third finds the attempts spent and dead-letters it. In
      // batches, one more run dies first on the whole batch, which counts as an attempt of no message.
      let runs = 0;
      for (; runs < 5 && (await count('poison')) < 19; runs++) {
        const consumer = startConsumer(env);
        await Promise.race([
          consumer.exited,
          waitFor(async () => (await count('poison')) >= 19, 'the rest handled', 60_000).then(() =>
            consumer.child.kill('SIGKILL'),
          ),
        ]);
        await consumer.exited;
      }
      await waitFor(() => dead.length >= 1, 'the poison message in the dead-letter topic', 30_000);
      await dlq.stop();
      expect(runs).toBe(batch ? 4 : 3);
      expect(await count('poison')).toBe(19);
      expect(JSON.parse(dead[0]!.value).id).toBe('p-7');
      expect(dead[0]!.headers[DLQ_HEADERS.attempts]).toBe('2');
      expect(await sequencesByKey('poison')).toEqual(
        new Map([
          [
            'one-key',
            [...Array.from({ length: 7 }, (_, i) => i), ...Array.from({ length: 12 }, (_, i) => i + 8)],
          ],
        ]),
      );
    },
    300_000,
  );

  async function sequencesByKey(table: string): Promise<Map<string, number[]>> {
    const { rows } = await db.pool.query<{ key: string; seqs: number[] }>(
      `SELECT key, array_agg(seq ORDER BY id) AS seqs FROM ${table} GROUP BY key ORDER BY key`,
    );
    return new Map(rows.map((r) => [r.key, r.seqs]));
  }
});
