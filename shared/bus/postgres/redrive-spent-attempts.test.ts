import { describe, expect, it } from 'vitest';
import { usePostgresBus } from '../../../test/support/postgres-bus.js';
import { DLQ_HEADERS } from '../port.js';
import { redriveDeadLetters, redriveGroup } from '../redrive.js';

/**
 * `npm run dead-letters -- redrive` exits 1 when a dead letter was not sent home (README, "Dead letters"): its
 * report must count every dead letter it moved on to `<topic>.dlq.dlq`.
 */
describe('redrive report (postgres log)', () => {
  const ctx = usePostgresBus([{ name: 'rd', partitions: 1, retentionMs: null }]);

  it('a dead letter whose re-publish attempts a run before spent (the database away, the run ended) is counted as failed', async () => {
    await ctx.bus.publish('rd.dlq', [
      { key: 'k', value: '{"seq":1}', headers: { [DLQ_HEADERS.topic]: 'rd', [DLQ_HEADERS.error]: 'boom' } },
    ]);
    // What a run left that failed the re-publish 5 times and then ended (its database away, it exited 1)
    // before the dead letter could be moved on: the attempts are spent, on record.
    await ctx.db.pool.query(
      `INSERT INTO bus_group_offsets (group_id, topic, partition, next_offset, attempt_offset, attempts)
       VALUES ($1, 'rd.dlq', 0, 0, 0, 5)`,
      [redriveGroup('rd')],
    );
    const report = await redriveDeadLetters({ bus: ctx.bus, pool: ctx.db.pool, topic: 'rd', pollMs: 50 });
    const { rows } = await ctx.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM bus_messages WHERE topic = 'rd.dlq.dlq'`,
    );
    expect(rows[0]!.n).toBe(1);
    // The next run moved it on to rd.dlq.dlq: it must say so (and exit 1), not report nothing.
    expect(report).toEqual({ topic: 'rd', redriven: 0, refused: 0, failed: 1 });
  });
});

describe('redrive while dead letters keep coming (postgres log)', () => {
  const ctx = usePostgresBus([{ name: 'rk', partitions: 1, retentionMs: null }]);

  it('re-sends the dead letters there were when it began, then stops', async () => {
    let seq = 0;
    const deadLetter = () =>
      ctx.bus.publish('rk.dlq', [
        {
          key: 'k',
          value: JSON.stringify({ seq: ++seq }),
          headers: { [DLQ_HEADERS.topic]: 'rk', [DLQ_HEADERS.error]: 'boom' },
        },
      ]);
    for (let i = 0; i < 3; i++) await deadLetter();
    // A consumer dead-lettering between every two looks (a cause not fixed yet, or one it sent home failing
    // again): a lag of 0 is never seen.
    const busy = Object.create(ctx.bus) as typeof ctx.bus;
    busy.lag = async (group, topics) => {
      await deadLetter();
      return ctx.bus.lag(group, topics);
    };
    const report = await Promise.race([
      redriveDeadLetters({ bus: busy, pool: ctx.db.pool, topic: 'rk', pollMs: 20 }),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('the redrive never ended')), 10_000),
      ),
    ]);
    // The 3 there were and the one the first look added (the target's); perhaps a few that came while it
    // stopped, each re-sent once and counted.
    expect(report).toMatchObject({ topic: 'rk', refused: 0, failed: 0 });
    expect(report.redriven).toBeGreaterThanOrEqual(4);
    const { rows } = await ctx.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM bus_messages WHERE topic = 'rk'`,
    );
    expect(rows[0]!.n).toBe(report.redriven);
  });
});
