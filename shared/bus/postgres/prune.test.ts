import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { usePostgresBus } from '../../../test/support/postgres-bus.js';
import { initPosition } from '../positions.js';
import { PostgresBus } from './postgres-bus.js';

describe('postgres log retention', () => {
  const ctx = usePostgresBus([
    { name: 'short', partitions: 2, retentionMs: 60_000 },
    { name: 'forever', partitions: 2, retentionMs: null },
  ]);

  it('deletes only messages older than their topic retention; null keeps them for ever', async () => {
    await ctx.bus.publish('short', [
      { key: 'a', value: 'old' },
      { key: 'b', value: 'old' },
    ]);
    await ctx.bus.publish('forever', [{ key: 'a', value: 'old' }]);
    await ctx.db.pool.query(`UPDATE bus_messages SET created_at = now() - interval '2 minutes'`);
    await ctx.bus.publish('short', [{ key: 'a', value: 'new' }]);
    expect(await ctx.bus.prune()).toBe(2);
    const { rows } = await ctx.db.pool.query<{ topic: string; value: string }>(
      'SELECT topic, value FROM bus_messages ORDER BY topic, value',
    );
    expect(rows).toEqual([
      { topic: 'forever', value: 'old' },
      { topic: 'short', value: 'new' },
    ]);
    // Offsets keep counting after a prune: nothing is ever re-numbered.
    await ctx.bus.publish('short', [{ key: 'a', value: 'newer' }]);
    const offsets = await ctx.db.pool.query<{ offset: string }>(
      `SELECT "offset" FROM bus_messages WHERE topic = 'short' AND key = 'a' ORDER BY "offset"`,
    );
    expect(offsets.rows.map((r) => Number(r.offset))).toEqual([1, 2]);
  });

  it('warns for each group whose unhandled messages it deleted, with their count; nothing for groups past them', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const bus = new PostgresBus({ pool: ctx.db.pool, connectionString: ctx.db.url, log });
    await ctx.db.pool.query('DELETE FROM bus_messages');
    await bus.publish('short', [
      { key: 'k', value: 'first' },
      { key: 'k', value: 'second' },
    ]);
    const { rows } = await ctx.db.pool.query<{ partition: number; offset: string }>(
      `SELECT partition, "offset" FROM bus_messages WHERE topic = 'short' ORDER BY "offset"`,
    );
    const partition = rows[0]!.partition;
    const first = BigInt(rows[0]!.offset);
    // 'behind' has handled neither message, 'halfway' the first, 'done' both.
    await initPosition(ctx.db.pool, { group: 'behind', topic: 'short', partition }, first);
    await initPosition(ctx.db.pool, { group: 'halfway', topic: 'short', partition }, first + 1n);
    await initPosition(ctx.db.pool, { group: 'done', topic: 'short', partition }, first + 2n);
    await ctx.db.pool.query(`UPDATE bus_messages SET created_at = now() - interval '2 minutes'`);
    expect(await bus.prune()).toBe(2);
    const warnings = lines.filter((l) => /expired before this group handled them/.test(String(l['msg'])));
    expect(
      warnings.map(({ group, topic, partition: p, messages }) => ({ group, topic, p, messages })),
    ).toEqual([
      { group: 'behind', topic: 'short', p: partition, messages: 2 },
      { group: 'halfway', topic: 'short', p: partition, messages: 1 },
    ]);
  });

  it('a group behind messages that expired lags by the messages still there, as on Kafka (from the low watermark)', async () => {
    await ctx.db.pool.query('DELETE FROM bus_messages');
    await ctx.bus.publish('short', [
      { key: 'k', value: 'old 1' },
      { key: 'k', value: 'old 2' },
    ]);
    const { rows } = await ctx.db.pool.query<{ partition: number; offset: string }>(
      `SELECT partition, "offset" FROM bus_messages WHERE topic = 'short' ORDER BY "offset"`,
    );
    const partition = rows[0]!.partition;
    const first = BigInt(rows[0]!.offset);
    // A group that never handled them (its consumer was down for longer than the retention).
    await initPosition(ctx.db.pool, { group: 'asleep', topic: 'short', partition }, first);
    await ctx.db.pool.query(`UPDATE bus_messages SET created_at = now() - interval '2 minutes'`);
    expect(await ctx.bus.prune()).toBe(2);
    const lagOf = async () =>
      (await ctx.bus.lag('asleep', ['short'])).find((p) => p.partition === partition)!;
    // Nothing is left for it to handle: a lag of 2 would stay until the next message of the partition (a
    // consumer_lagging alert that never clears, a replay or redrive waiting for ever for its ends).
    expect(await lagOf()).toMatchObject({ lag: 0n, end: first + 2n });
    await ctx.bus.publish('short', [{ key: 'k', value: 'new' }]);
    expect(await lagOf()).toMatchObject({ lag: 1n, end: first + 3n });
  });

  it('keeps the partition count of an existing topic and refuses unknown topics', async () => {
    await ctx.bus.ensureTopics([{ name: 'short', partitions: 5, retentionMs: 60_000 }]);
    expect(await ctx.bus.partitionCount('short')).toBe(2);
    await expect(ctx.bus.publish('nope', [{ key: 'a', value: 'x' }])).rejects.toThrow(
      /topic "nope" does not exist/,
    );
    // Every topic gets its dead-letter topic.
    expect(await ctx.bus.partitionCount('short.dlq')).toBe(2);
  });
});
