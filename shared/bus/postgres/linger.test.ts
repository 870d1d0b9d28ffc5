import { describe, expect, it } from 'vitest';
import { usePostgresBus } from '../../../test/support/postgres-bus.js';
import { waitFor } from '../../../test/support/wait.js';

describe('postgres log: batchLingerMs', () => {
  const ctx = usePostgresBus();

  it('reads a message after a quiet spell at once, then lets a stream gather into one batch', async () => {
    await ctx.bus.ensureTopics([{ name: 'linger', partitions: 1, retentionMs: null }]);
    const batches: number[][] = [];
    const sub = await ctx.bus.subscribe({
      group: 'linger-g',
      topics: ['linger'],
      batchLingerMs: 1_500,
      batchHandler: async (messages) => {
        batches.push(messages.map((m) => Number(m.value)));
      },
    });
    try {
      const started = performance.now();
      await ctx.bus.publish('linger', [{ key: 'k', value: '0' }]);
      await waitFor(() => batches.length === 1, 'the lone message');
      // Not held back by the linger: it came after a quiet spell.
      expect(performance.now() - started).toBeLessThan(1_200);
      // Published one by one while the consumer lingers after that batch: handled as one batch.
      for (let i = 1; i <= 5; i++) await ctx.bus.publish('linger', [{ key: 'k', value: String(i) }]);
      await waitFor(() => batches.flat().length === 6, 'six messages', 10_000);
      expect(batches).toEqual([[0], [1, 2, 3, 4, 5]]);
    } finally {
      await sub.stop();
    }
  });

  it('refuses a batchLingerMs that is not an integer from 0 to 10000', async () => {
    for (const batchLingerMs of [-1, 1.5, 20_000]) {
      await expect(
        ctx.bus.subscribe({
          group: 'bad',
          topics: ['linger'],
          batchLingerMs,
          batchHandler: async () => undefined,
        }),
      ).rejects.toThrow(/batchLingerMs/);
    }
  });
});
