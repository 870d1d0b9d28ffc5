import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { applyOnce } from '../../shared/bus/apply-once.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { spawnTs, type Spawned } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const MESSAGES = 10_000;
const KEYS = 16;
const KILLS = 4;

/**
 * Acceptance of the postgres log: 10,000 messages over 16 keys while the consumer process is killed hard
 * (SIGKILL, no graceful stop) at random points: every message is handled, per-key order holds, effects are
 * exactly once (counted rows), and a replay from the beginning into a fresh projection gives the same result.
 */
describe('postgres log under hard kills', () => {
  let db: TestDatabase;
  let bus: PostgresBus;
  const topic = 'crash.test';
  const log = createLogger({ level: 'silent' });

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = new PostgresBus({ pool: db.pool, connectionString: db.url, log, rebalanceMs: 200 });
    await bus.ensureTopics([{ name: topic, partitions: 8, retentionMs: null }]);
    for (const table of ['projection', 'replay']) {
      await db.pool.query(
        `CREATE TABLE ${table} (id bigserial PRIMARY KEY, key text NOT NULL, seq int NOT NULL, event_id text NOT NULL)`,
      );
    }
  });
  afterAll(async () => {
    await bus?.close();
    await db?.drop();
  });

  const count = async (table: string) =>
    Number((await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);

  function startConsumer(): Spawned {
    return spawnTs('test/support/crash-consumer.ts', [], {
      ...process.env,
      DB_URL: db.url,
      TOPIC: topic,
      GROUP: 'crash-group',
      TABLE: 'projection',
    });
  }

  it('handles every message exactly once, in per-key order, across SIGKILLs, and replays identically', async () => {
    // Publish in the background while the consumer is being killed, as a live producer would.
    const publishing = (async () => {
      const next = new Array<number>(KEYS).fill(0);
      for (let sent = 0; sent < MESSAGES; sent += 100) {
        const batch = Array.from({ length: 100 }, (_, i) => {
          const k = (sent + i) % KEYS;
          const seq = next[k]!++;
          const id = `m-${k}-${seq}`;
          return { key: `key-${k}`, value: JSON.stringify({ id, key: `key-${k}`, seq }) };
        });
        await bus.publish(topic, batch);
        if (sent % 2_000 === 0) await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const kills: Array<{ afterMs: number; handledBefore: number }> = [];
    for (let i = 0; i < KILLS; i++) {
      const consumer = startConsumer();
      await consumer.waitFor(/consumer ready/, 30_000);
      const afterMs = 300 + Math.floor(Math.random() * 900);
      await new Promise((r) => setTimeout(r, afterMs));
      consumer.child.kill('SIGKILL');
      await consumer.exited;
      kills.push({ afterMs, handledBefore: await count('projection') });
    }
    await publishing;
    // At least three kills landed mid-stream, with work still pending.
    expect(kills.filter((k) => k.handledBefore < MESSAGES).length).toBeGreaterThanOrEqual(3);

    const last = startConsumer();
    try {
      await waitFor(async () => (await count('projection')) >= MESSAGES, `${MESSAGES} rows`, 120_000);
      await waitFor(
        async () => (await bus.lag('crash-group', [topic])).every((p) => p.lag === 0n),
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
      group: 'replay-group',
      topics: [topic],
      startFrom: 'earliest',
      handler: async (message, context) => {
        const { id, key, seq } = JSON.parse(message.value) as { id: string; key: string; seq: number };
        await applyOnce(db.pool, 'projection:replay', id, context, async (tx) => {
          await tx.query('INSERT INTO replay (key, seq, event_id) VALUES ($1, $2, $3)', [key, seq, id]);
        });
      },
    });
    await waitFor(async () => (await count('replay')) >= MESSAGES, 'replay complete', 120_000);
    await replayed.stop();
    expect(await count('replay')).toBe(MESSAGES);
    expect(await sequencesByKey('replay')).toEqual(sequences);
  }, 300_000);

  async function sequencesByKey(table: string): Promise<Map<string, number[]>> {
    const { rows } = await db.pool.query<{ key: string; seqs: number[] }>(
      `SELECT key, array_agg(seq ORDER BY id) AS seqs FROM ${table} GROUP BY key ORDER BY key`,
    );
    return new Map(rows.map((r) => [r.key, r.seqs]));
  }
});
