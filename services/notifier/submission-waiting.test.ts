import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { JobTable } from '../../shared/sender/index.js';
import { senderMigrations } from '../../shared/sender/nonces.js';
import { TEST_JOBS_TABLE } from '../../shared/sender/test-harness.js';
import { registerSenderGauges } from '../../shared/sender/metrics.js';
import { pipelineHealth } from '../../shared/runtime/pipeline-health.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { DEFAULT_LIMITS, HealthWatch } from './watch.js';

/**
 * A job nobody signs (an Agent complaint left `accepted` by a stopped command consumer, or `scheduled` while the
 * sender stands by for a lock holder that does not send) never reaches the unconfirmed gauge, so nothing told
 * the operator: `<prefix>_oldest_waiting_seconds{status}` measures it from the job table, and the notifier's
 * `submission_waiting` tells it once per episode.
 */
describe('sender gauges and notifier: jobs waiting before signing', () => {
  let db: TestDatabase;
  let registry: Registry;

  beforeAll(async () => {
    db = await createTestDatabase([senderMigrations]);
    await db.pool.query(TEST_JOBS_TABLE);
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(async () => {
    await db.pool.query('TRUNCATE test_jobs');
    const jobs = new JobTable(db.pool, 'test_jobs', 'job');
    registry = new Registry();
    registerSenderGauges(
      registry,
      {
        prefix: 'agent',
        wallet: 'Agent',
        transactions: 'complaint',
        jobsByStatus: { name: 'agent_submissions', help: 'test' },
      },
      {
        balanceWei: () => undefined,
        oldestUnconfirmedSinceMs: () => undefined,
        jobCounts: () => jobs.countJobs(),
        statuses: ['accepted', 'scheduled', 'signed', 'confirmed'],
        waitingStatuses: ['accepted', 'scheduled'],
      },
    );
  });
  const waiting = async () =>
    Object.fromEntries(
      (await registry.getSingleMetric('agent_oldest_waiting_seconds')!.get()).values.map((v) => [
        v.labels.status,
        v.value,
      ]),
    );
  const insert = (job: string, status: string, secondsAgo: number) =>
    db.pool.query(
      `INSERT INTO test_jobs (job, status, updated_at) VALUES ($1, $2, now() - make_interval(secs => $3))`,
      [job, status, secondsAgo],
    );

  it('reads the age of the job longest in each waiting status, 0 for a status none waits in', async () => {
    expect(await waiting()).toEqual({ accepted: 0, scheduled: 0 });
    await insert('a', 'accepted', 30);
    await insert('b', 'accepted', 900);
    // Signed and final jobs are not waiting before signing, however old.
    await insert('c', 'signed', 5_000);
    await insert('d', 'confirmed', 9_000);
    const ages = await waiting();
    expect(ages.accepted).toBeGreaterThanOrEqual(900);
    expect(ages.accepted).toBeLessThan(960);
    expect(ages.scheduled).toBe(0);
    expect(Object.keys(ages).sort()).toEqual(['accepted', 'scheduled']);
    expect((await pipelineHealth(registry)).oldestWaitingSeconds).toEqual({
      agent: { accepted: expect.closeTo(ages.accepted!, -1), scheduled: 0 },
    });
  });

  it('tells submission_waiting once per episode, and again in a new one', async () => {
    const watch = new HealthWatch(registry, DEFAULT_LIMITS);
    let now = Date.now();
    const look = async () => {
      const due = await watch.look(now);
      for (const d of due) d.commit();
      return due.map((d) => d.notification).filter((n) => n.kind === 'submission_waiting');
    };
    await insert('a', 'scheduled', DEFAULT_LIMITS.stuckSeconds - 60);
    expect(await look()).toEqual([]);

    await insert('b', 'scheduled', DEFAULT_LIMITS.stuckSeconds + 60);
    const told = await look();
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({
      id: expect.stringMatching(/^submission_waiting:agent:scheduled:\d+$/),
      payload: { service: 'agent', status: 'scheduled', limitSeconds: DEFAULT_LIMITS.stuckSeconds },
    });
    expect(told[0]!.payload.oldestWaitingSeconds).toBeGreaterThan(DEFAULT_LIMITS.stuckSeconds);
    expect(await look()).toEqual([]);

    // It is signed: once nothing waits too long for clearAfterSeconds, the episode ends; a later job stuck the
    // same way is a new one.
    await db.pool.query(`UPDATE test_jobs SET status = 'signed', updated_at = now() WHERE job = 'b'`);
    expect(await look()).toEqual([]);
    now += DEFAULT_LIMITS.clearAfterSeconds * 1000;
    expect(await look()).toEqual([]);
    await insert('c', 'scheduled', DEFAULT_LIMITS.stuckSeconds + 5);
    expect(await look()).toHaveLength(1);
  });
});
