import { describe, expect, it } from 'vitest';
import { usePostgresBus } from '../../../test/support/postgres-bus.js';

/**
 * A batch try must be on record before it starts (BatchTries), so a member killed in it is known to its
 * successor, which then delivers that batch one by one (a message that kills the process is isolated).
 */
describe('postgres log: batch try record after a seek', () => {
  const ctx = usePostgresBus([{ name: 'bt', partitions: 1, retentionMs: null }]);

  it('a seek to where the group is clears the try the last commit recorded: the next batch records its own', async () => {
    const group = 'bt-group';
    const seen: Array<{ first: string; size: number; attemptOffset: string | null; batch: boolean }> = [];
    let handled = 0;
    await ctx.bus.publish(
      'bt',
      Array.from({ length: 5 }, (_, i) => ({ key: 'k', value: String(i) })),
    );
    const sub = await ctx.bus.subscribe({
      group,
      topics: ['bt'],
      maxBatch: 100,
      batchLingerMs: 0,
      batchHandler: async (messages) => {
        const { rows } = await ctx.db.pool.query<{ attempt_offset: string | null; attempt_batch: boolean }>(
          'SELECT attempt_offset, attempt_batch FROM bus_group_offsets WHERE group_id = $1',
          [group],
        );
        seen.push({
          first: String(messages[0]!.offset),
          size: messages.length,
          attemptOffset: rows[0]!.attempt_offset,
          batch: rows[0]!.attempt_batch,
        });
        handled += messages.length;
      },
    });
    try {
      const until = async (n: number) => {
        for (let i = 0; i < 200 && handled < n; i++) await new Promise((r) => setTimeout(r, 25));
        expect(handled).toBeGreaterThanOrEqual(n);
      };
      await until(5);
      // The operator seeks the group to where it is (an offset, or a time that resolves there).
      await ctx.bus.seek(group, 'bt', { to: 'offset', partition: 0, offset: 5n });
      await new Promise((r) => setTimeout(r, 200));
      await ctx.bus.publish(
        'bt',
        Array.from({ length: 5 }, (_, i) => ({ key: 'k', value: String(5 + i) })),
      );
      await until(10);
      // The batch from 5 was tried whole: a member killed in it must leave its try on record.
      const second = seen.find((s) => s.first === '5' && s.size > 1);
      expect(second).toBeDefined();
      expect(second).toMatchObject({ attemptOffset: '5', batch: true });
    } finally {
      await sub.stop();
    }
  });
});
