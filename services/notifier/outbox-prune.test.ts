import { Gauge, Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { freePort } from '../../shared/net/free-port.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { serviceContext } from '../../test/support/service-context.js';
import { waitFor } from '../../test/support/wait.js';
import { notifierService } from './index.js';
import { notifierMigrations } from './migrations.js';
import { enqueue, lastToldDeadLetters, pruneDelivered } from './outbox.js';
import { HealthWatch } from './watch.js';

/** Delivered notifications are kept notifier.keepDeliveredDays, then deleted; undelivered ones never are. */
describe('notifier outbox: deleting old delivered rows', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase([notifierMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(async () => {
    await db.pool.query('TRUNCATE notifier_outbox');
    // Delivered 100, 95 and 10 days ago; one never delivered, queued 200 days ago (n8n down since).
    await db.pool.query(
      `INSERT INTO notifier_outbox (id, kind, payload, created_at, delivered_at, next_attempt_at) VALUES
        ('old-1', 'violation', '{}', now() - interval '100 days', now() - interval '100 days', now()),
        ('old-2', 'violation', '{}', now() - interval '95 days', now() - interval '95 days', now()),
        ('recent', 'violation', '{}', now() - interval '10 days', now() - interval '10 days', now()),
        ('waiting', 'violation', '{}', now() - interval '200 days', NULL, now() + interval '1 hour')`,
    );
  });
  const ids = async () =>
    (await db.pool.query<{ id: string }>('SELECT id FROM notifier_outbox ORDER BY id')).rows.map((r) => r.id);

  it('deletes rows delivered before the limit, oldest first and at most a batch a call', async () => {
    expect(await pruneDelivered(db.pool, 90, 1)).toBe(1);
    expect(await ids()).toEqual(['old-2', 'recent', 'waiting']);
    expect(await pruneDelivered(db.pool, 90)).toBe(1);
    expect(await pruneDelivered(db.pool, 90)).toBe(0);
    expect(await ids()).toEqual(['recent', 'waiting']);
  });

  it("keeps each state's newest notification whatever its age: a later look would tell that total again", async () => {
    const registry = new Registry();
    new Gauge({ name: 'relay_job_failures', help: 'failures so far', registers: [registry] }).set(3);
    const watch = new HealthWatch(registry);
    const look = async () => {
      for (const due of await watch.look()) {
        await enqueue(db.pool, due.notification);
        due.commit();
      }
    };
    await db.pool.query(
      `INSERT INTO notifier_outbox (id, kind, payload, created_at, delivered_at, next_attempt_at) VALUES
        ('submission_failed:relay:2', 'submission_failed', '{}', now() - interval '120 days', now() - interval '120 days', now()),
        ('submission_failed:relay:3', 'submission_failed', '{}', now() - interval '110 days', now() - interval '110 days', now()),
        ('message_dead_lettered:chain.events.dlq:4', 'message_dead_lettered', '{}', now() - interval '100 days', now() - interval '100 days', now())`,
    );
    await pruneDelivered(db.pool, 90);
    expect(await ids()).toEqual([
      'message_dead_lettered:chain.events.dlq:4',
      'recent',
      'submission_failed:relay:3',
      'waiting',
    ]);
    expect(await lastToldDeadLetters(db.pool, 'chain.events.dlq')).toEqual({ epoch: 0, total: 4 });
    await db.pool.query(
      `INSERT INTO notifier_outbox (id, kind, payload, created_at, delivered_at, next_attempt_at) VALUES
        ('message_dead_lettered:chain.events.dlq:1.2', 'message_dead_lettered', '{}', now(), now(), now()),
        ('message_dead_lettered:chain.events.dlq.dlq:9', 'message_dead_lettered', '{}', now(), now(), now())`,
    );
    expect(await lastToldDeadLetters(db.pool, 'chain.events.dlq')).toEqual({ epoch: 1, total: 2 });
    expect(await lastToldDeadLetters(db.pool, 'swap.verdicts.dlq')).toBeUndefined();
    // A fresh process looks: total 3 was told, nothing new goes out.
    await look();
    const { rows } = await db.pool.query(
      `SELECT id FROM notifier_outbox WHERE delivered_at IS NULL AND kind = 'submission_failed'`,
    );
    expect(rows).toEqual([]);
  });

  it('the notifier deletes them at start with notifier.keepDeliveredDays, and keeps undelivered ones', async () => {
    const ctx = await serviceContext(
      db,
      `n8nUrl = "http://127.0.0.1:${await freePort()}/webhook"\n[notifier]\nkeepDeliveredDays = 30`,
      ['n8nUrl'],
    );
    const notifier = await notifierService.start(ctx);
    try {
      await waitFor(async () => (await ids()).length === 2, 'old delivered rows deleted');
      expect(await ids()).toEqual(['recent', 'waiting']);
    } finally {
      await notifier.stop();
      await ctx.close();
    }
  });
});
