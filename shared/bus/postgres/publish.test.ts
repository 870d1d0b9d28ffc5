import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../db/pool.js';
import { usePostgresBus } from '../../../test/support/postgres-bus.js';
import { partitionFor } from '../partitioner.js';
import { countQueries } from '../../../test/support/query-counter.js';

describe('postgres log publish', () => {
  const ctx = usePostgresBus([
    { name: 'a', partitions: 4, retentionMs: null },
    { name: 'b', partitions: 3, retentionMs: null },
    { name: 'c', partitions: 1, retentionMs: null },
  ]);

  it('stores a key with U+0000 (free text, e.g. a violation’s party:subject) with it as the six characters \\u0000', async () => {
    // PostgreSQL text cannot hold U+0000: the publish used to fail. Values are JSON text (U+0000 escaped).
    await ctx.bus.publish('a', [{ key: 'lp:lp\u0000x', value: JSON.stringify({ subject: 'lp\u0000x' }) }]);
    const { rows } = await ctx.db.pool.query<{ partition: number; key: string; value: string }>(
      `SELECT partition, key, value FROM bus_messages WHERE topic = 'a'`,
    );
    expect(rows).toEqual([
      {
        partition: partitionFor('lp:lp\\u0000x', 4),
        key: 'lp:lp\\u0000x',
        value: JSON.stringify({ subject: 'lp\u0000x' }),
      },
    ]);
    await ctx.db.pool.query('DELETE FROM bus_messages');
    await ctx.db.pool.query('UPDATE bus_partitions SET next_offset = 0');
  });

  it('is one statement without a transaction, whatever the number of partitions and topics', async () => {
    await ctx.bus.partitionCount('a');
    await ctx.bus.partitionCount('b');
    const counter = countQueries(new URL(ctx.db.url).pathname.slice(1));
    try {
      const messages = Array.from({ length: 40 }, (_, i) => ({ key: `k${i}`, value: `v${i}` }));
      await ctx.bus.publishMany([
        { topic: 'a', messages },
        { topic: 'b', messages },
      ]);
    } finally {
      counter.stop();
    }
    // No BEGIN / COMMIT: the single statement is atomic by itself.
    expect(counter.texts).toHaveLength(1);
    expect(counter.texts[0]).toMatch(/INSERT INTO bus_messages/);
    await ctx.db.pool.query('DELETE FROM bus_messages');
    await ctx.db.pool.query('UPDATE bus_partitions SET next_offset = 0');
  });

  it('concurrent publishers over overlapping partitions: no deadlock, gap-free offsets, per-key order', async () => {
    const keys = Array.from({ length: 12 }, (_, i) => `key-${i}`);
    // Each publisher sends its own sequence per key, in both topic orders, so their partition sets overlap.
    const publishers = Array.from({ length: 12 }, (_, p) =>
      (async () => {
        for (let round = 0; round < 10; round++) {
          const messages = keys.map((key, i) => ({ key, value: `${p}:${round}:${i}` }));
          const batches = [
            { topic: 'a', messages },
            { topic: 'b', messages: [...messages].reverse() },
          ];
          if (p % 2 === 0) batches.reverse();
          if (p % 3 === 0) await withTransaction(ctx.db.pool, (tx) => ctx.bus.publishMany(batches, { tx }));
          else await ctx.bus.publishMany(batches);
        }
      })(),
    );
    await Promise.all(publishers);
    const { rows } = await ctx.db.pool.query<{
      topic: string;
      partition: number;
      offset: string;
      key: string;
      value: string;
    }>(`SELECT topic, partition, "offset", key, value FROM bus_messages ORDER BY topic, partition, "offset"`);
    expect(rows).toHaveLength(2 * 12 * 10 * keys.length);
    const byPartition = new Map<string, number[]>();
    const byKey = new Map<string, string[]>();
    for (const r of rows) {
      expect(r.partition).toBe(partitionFor(r.key, r.topic === 'a' ? 4 : 3));
      const offsets = byPartition.get(`${r.topic}/${r.partition}`) ?? [];
      offsets.push(Number(r.offset));
      byPartition.set(`${r.topic}/${r.partition}`, offsets);
      const values = byKey.get(`${r.topic}/${r.key}`) ?? [];
      values.push(r.value);
      byKey.set(`${r.topic}/${r.key}`, values);
    }
    for (const [partition, offsets] of byPartition) {
      expect(offsets, partition).toEqual(offsets.map((_, i) => i));
      const { rows: next } = await ctx.db.pool.query<{ next_offset: string }>(
        'SELECT next_offset FROM bus_partitions WHERE topic = $1 AND partition = $2',
        partition.split('/'),
      );
      expect(Number(next[0]!.next_offset)).toBe(offsets.length);
    }
    // Per key and publisher, the rounds appear in the order they were published.
    for (const values of byKey.values()) {
      for (let p = 0; p < 12; p++) {
        const rounds = values.filter((v) => v.startsWith(`${p}:`)).map((v) => Number(v.split(':')[1]));
        expect(rounds).toEqual([...rounds].sort((x, y) => x - y));
        expect(rounds).toHaveLength(10);
      }
    }
  });

  it('a missing partition fails the whole publish and writes nothing', async () => {
    const before = await ctx.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM bus_messages');
    await ctx.db.pool.query(`DELETE FROM bus_partitions WHERE topic = 'b' AND partition = $1`, [
      partitionFor('lost', 3),
    ]);
    await expect(
      ctx.bus.publishMany([
        { topic: 'a', messages: [{ key: 'x', value: '1' }] },
        { topic: 'b', messages: [{ key: 'lost', value: '2' }] },
      ]),
    ).rejects.toThrow(/does not exist/);
    const after = await ctx.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM bus_messages');
    expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
  });

  it("publishMany with two batches of one topic publishes both (as the port's per-topic fallback does)", async () => {
    await expect(
      ctx.bus.publishMany([
        { topic: 'c', messages: [{ key: 'k', value: 'a' }] },
        { topic: 'c', messages: [{ key: 'k', value: 'b' }] },
      ]),
    ).resolves.toBeUndefined();
    const { rows } = await ctx.db.pool.query<{ value: string }>(
      `SELECT value FROM bus_messages WHERE topic = 'c' ORDER BY "offset"`,
    );
    expect(rows.map((r) => r.value)).toEqual(['a', 'b']);
  });
});
