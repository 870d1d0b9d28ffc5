import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';
import { PostgresBus } from './postgres-bus.js';

describe('postgres log retention', () => {
  let db: TestDatabase;
  let bus: PostgresBus;
  beforeAll(async () => {
    db = await createTestDatabase();
    bus = new PostgresBus({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
    });
    await bus.ensureTopics([
      { name: 'short', partitions: 2, retentionMs: 60_000 },
      { name: 'forever', partitions: 2, retentionMs: null },
    ]);
  });
  afterAll(async () => db.drop());

  it('deletes only messages older than their topic retention; null keeps them for ever', async () => {
    await bus.publish('short', [
      { key: 'a', value: 'old' },
      { key: 'b', value: 'old' },
    ]);
    await bus.publish('forever', [{ key: 'a', value: 'old' }]);
    await db.pool.query(`UPDATE bus_messages SET created_at = now() - interval '2 minutes'`);
    await bus.publish('short', [{ key: 'a', value: 'new' }]);
    expect(await bus.prune()).toBe(2);
    const { rows } = await db.pool.query<{ topic: string; value: string }>(
      'SELECT topic, value FROM bus_messages ORDER BY topic, value',
    );
    expect(rows).toEqual([
      { topic: 'forever', value: 'old' },
      { topic: 'short', value: 'new' },
    ]);
    // Offsets keep counting after a prune: nothing is ever re-numbered.
    await bus.publish('short', [{ key: 'a', value: 'newer' }]);
    const offsets = await db.pool.query<{ offset: string }>(
      `SELECT "offset" FROM bus_messages WHERE topic = 'short' AND key = 'a' ORDER BY "offset"`,
    );
    expect(offsets.rows.map((r) => Number(r.offset))).toEqual([1, 2]);
  });

  it('keeps the partition count of an existing topic and refuses unknown topics', async () => {
    await bus.ensureTopics([{ name: 'short', partitions: 5, retentionMs: 60_000 }]);
    expect(await bus.partitionCount('short')).toBe(2);
    await expect(bus.publish('nope', [{ key: 'a', value: 'x' }])).rejects.toThrow(
      /topic "nope" does not exist/,
    );
    // Every topic gets its dead-letter topic.
    expect(await bus.partitionCount('short.dlq')).toBe(2);
  });
});
