import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';
import { waitFor } from '../../../test/support/wait.js';
import { PostgresBus } from './postgres-bus.js';

describe('postgres log: batchLingerMs', () => {
  let db: TestDatabase;
  let bus: PostgresBus;
  beforeAll(async () => {
    db = await createTestDatabase();
    bus = new PostgresBus({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
    });
  });
  afterAll(async () => {
    await bus.close();
    await db.drop();
  });

  it('reads a message after a quiet spell at once, then lets a stream gather into one batch', async () => {
    await bus.ensureTopics([{ name: 'linger', partitions: 1, retentionMs: null }]);
    const batches: number[][] = [];
    const sub = await bus.subscribe({
      group: 'linger-g',
      topics: ['linger'],
      batchLingerMs: 1_500,
      batchHandler: async (messages) => {
        batches.push(messages.map((m) => Number(m.value)));
      },
    });
    try {
      const started = performance.now();
      await bus.publish('linger', [{ key: 'k', value: '0' }]);
      await waitFor(() => batches.length === 1, 'the lone message');
      // Not held back by the linger: it came after a quiet spell.
      expect(performance.now() - started).toBeLessThan(1_200);
      // Published one by one while the consumer lingers after that batch: handled as one batch.
      for (let i = 1; i <= 5; i++) await bus.publish('linger', [{ key: 'k', value: String(i) }]);
      await waitFor(() => batches.flat().length === 6, 'six messages', 10_000);
      expect(batches).toEqual([[0], [1, 2, 3, 4, 5]]);
    } finally {
      await sub.stop();
    }
  });

  it('refuses a batchLingerMs that is not an integer from 0 to 10000', async () => {
    for (const batchLingerMs of [-1, 1.5, 20_000]) {
      await expect(
        bus.subscribe({
          group: 'bad',
          topics: ['linger'],
          batchLingerMs,
          batchHandler: async () => undefined,
        }),
      ).rejects.toThrow(/batchLingerMs/);
    }
  });
});
