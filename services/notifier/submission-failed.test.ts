import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLEARED_TRANSACTION_STATE, JobTable } from '../../shared/sender/index.js';
import { senderMigrations } from '../../shared/sender/nonces.js';
import { TEST_JOBS_TABLE } from '../../shared/sender/test-harness.js';
import { registerSenderGauges } from '../../shared/sender/metrics.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { notifierMigrations } from './migrations.js';
import { enqueue } from './outbox.js';
import { DEFAULT_LIMITS, HealthWatch } from './watch.js';

/**
 * `submission_failed` from the job table to the outbox: the sender's gauges read the table, the watch reads the
 * gauges, and each look's notifications are enqueued (the outbox keeps one row per id). A job that fails, is
 * re-opened and fails again is a second failure and must be told, although the failed count is 1 both times.
 */
describe('notifier: submission_failed follows failures, not the failed count', () => {
  let db: TestDatabase;
  let jobs: JobTable;

  beforeAll(async () => {
    db = await createTestDatabase([senderMigrations, notifierMigrations]);
    await db.pool.query(TEST_JOBS_TABLE);
    jobs = new JobTable(db.pool, 'test_jobs', 'job');
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** A process's registry with the relay's sender gauges over test_jobs, and a watch reading it. */
  const newProcess = () => {
    const registry = new Registry();
    registerSenderGauges(
      registry,
      {
        prefix: 'relay',
        wallet: 'relay',
        transactions: 'relay',
        jobsByStatus: { name: 'relay_commands', help: 'test' },
      },
      {
        balanceWei: () => undefined,
        oldestUnconfirmedSinceMs: () => undefined,
        jobCounts: () => jobs.countJobs(),
        statuses: ['scheduled', 'confirmed', 'failed'],
        waitingStatuses: [],
      },
    );
    return new HealthWatch(registry, DEFAULT_LIMITS);
  };
  const look = async (watch: HealthWatch) => {
    for (const due of await watch.look()) {
      await enqueue(db.pool, due.notification);
      due.commit();
    }
  };
  const outbox = async () =>
    (
      await db.pool.query<{ id: string; payload: Record<string, unknown> }>(
        `SELECT id, payload FROM notifier_outbox WHERE kind = 'submission_failed' ORDER BY created_at, id`,
      )
    ).rows;
  const reopen = (job: string) =>
    db.pool.query(`UPDATE test_jobs SET status = 'scheduled', ${CLEARED_TRANSACTION_STATE} WHERE job = $1`, [
      job,
    ]);

  it('tells a failure of a re-opened job again, each failure once, also after a restart', async () => {
    await db.pool.query(`INSERT INTO test_jobs (job, status) VALUES ('a', 'scheduled'), ('b', 'scheduled')`);
    const watch = newProcess();
    await look(watch);
    expect(await outbox()).toEqual([]);

    await jobs.finish('a', { status: 'failed', reason: 'reverted' });
    await look(watch);
    await look(watch);
    expect(await outbox()).toEqual([
      {
        id: 'submission_failed:relay:1',
        payload: expect.objectContaining({ service: 'relay', failures: 1, failed: 1 }),
      },
    ]);

    // Re-opened: nothing failed now, nothing new to tell.
    await reopen('a');
    await look(watch);
    expect(await outbox()).toHaveLength(1);

    // It fails again: the failed count is 1 as before, but this is a new failure.
    await jobs.finish('a', { status: 'failed', reason: 'reverted again' });
    await look(watch);
    expect((await outbox()).map((r) => [r.id, r.payload.failures, r.payload.failed])).toEqual([
      ['submission_failed:relay:1', 1, 1],
      ['submission_failed:relay:2', 2, 1],
    ]);

    // A confirmation, or a final job finished again, is no failure.
    await jobs.finish('b', { status: 'confirmed', blockNumber: 3, txHash: 'hb' });
    await jobs.finish('a', { status: 'failed', reason: 'a stale pass' });
    await look(watch);
    expect(await outbox()).toHaveLength(2);

    // A restarted process reads the same total from the table: nothing told twice.
    await look(newProcess());
    expect(await outbox()).toHaveLength(2);
  });
});
