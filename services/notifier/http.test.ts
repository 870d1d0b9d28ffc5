import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../shared/net/free-port.js';
import type { RunningService } from '../../shared/runtime/service.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { serviceContext } from '../../test/support/service-context.js';
import { notifierService, OUTBOX_DEGRADED_AFTER_SECONDS } from './index.js';
import { notifierMigrations } from './migrations.js';

/**
 * A notifier in a process of its own (its own container) with `notifier.port`: /health (database and outbox)
 * and /metrics (its outbox gauges, which no other service's /metrics shows then), {code, message} elsewhere.
 */
describe('notifier: its own /health and /metrics with notifier.port', () => {
  let db: TestDatabase;
  let ctx: Awaited<ReturnType<typeof serviceContext>>;
  let notifier: RunningService;
  let port: number;
  const get = async (path: string) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: response.status, text: await response.text() };
  };

  beforeAll(async () => {
    db = await createTestDatabase([notifierMigrations]);
    port = await freePort();
    const refused = await freePort(); // n8n down: nothing delivers
    ctx = await serviceContext(
      db,
      `n8nUrl = "http://127.0.0.1:${refused}/webhook/otmoic"\n[notifier]\nport = ${port}`,
      ['n8nUrl'],
    );
    notifier = await notifierService.start(ctx);
  });
  afterAll(async () => {
    await notifier?.stop();
    await ctx?.close();
    await db?.drop();
  });

  it('answers /health with its outbox, degraded once a notification waited too long, and /metrics', async () => {
    const healthy = await get('/health');
    expect(healthy.status).toBe(200);
    expect(JSON.parse(healthy.text)).toMatchObject({
      status: 'ok',
      service: 'notifier',
      checks: { database: { ok: true }, outbox: { status: 'ok', pending: 0, oldestPendingSeconds: 0 } },
    });

    // A notification queued long ago and not delivered (n8n down since).
    await db.pool.query(
      `INSERT INTO notifier_outbox (id, kind, payload, created_at, next_attempt_at)
       VALUES ('violation:old', 'violation', '{}', now() - make_interval(secs => $1), now() + interval '1 hour')`,
      [OUTBOX_DEGRADED_AFTER_SECONDS + 60],
    );
    const degraded = await get('/health');
    expect(degraded.status).toBe(200); // a restart would not bring n8n back
    expect(JSON.parse(degraded.text)).toMatchObject({
      status: 'degraded',
      checks: { outbox: { status: 'degraded', pending: 1 } },
    });
    expect(JSON.parse(degraded.text).checks.outbox.oldestPendingSeconds).toBeGreaterThan(
      OUTBOX_DEGRADED_AFTER_SECONDS,
    );

    const metrics = await get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/^notifier_outbox_pending 1$/m);
    expect(metrics.text).toMatch(/^notifier_deliveries_total\{outcome="failed"\} \d+$/m);

    const unknown = await get('/nope');
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.text)).toEqual({ code: 404, message: 'no route GET /nope' });
  });
});
