import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/wait.js';
import { enqueue } from './outbox.js';
import { notifierWithReceiver } from './test-harness.js';

/** The outbox's metrics: pending rows and the oldest one's age from the database, attempts by outcome. */
describe('notifier outbox metrics', () => {
  let env: Awaited<ReturnType<typeof notifierWithReceiver>>;
  let status = 404;
  const registry = new Registry();
  const password = 'metrics-secret-token';

  beforeAll(async () => {
    env = await notifierWithReceiver({
      handle: (request, response) => {
        request.resume();
        request.on('end', () => response.writeHead(status).end());
      },
      url: (port) => `http://ops:${password}@127.0.0.1:${port}/webhook`,
      context: { metrics: registry },
    });
  });

  afterAll(async () => env?.close());

  const value = async (name: string, labels: Record<string, string> = {}) => {
    const metric = registry.getSingleMetric(name);
    if (!metric) throw new Error(`${name} not registered`);
    const { values } = await metric.get();
    return values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
  };

  it('counts failed attempts while a row waits, then the delivery, and the outbox drains to 0', async () => {
    expect(await value('notifier_outbox_pending')).toBe(0);
    expect(await value('notifier_outbox_oldest_pending_seconds')).toBe(0);
    expect(await value('notifier_deliveries_total', { outcome: 'failed' })).toBe(0);

    await enqueue(env.db.pool, { id: 'violation:0x01', kind: 'violation', payload: {} });
    await waitFor(
      async () => ((await value('notifier_deliveries_total', { outcome: 'failed' })) ?? 0) >= 2,
      'two failed attempts (404)',
      10_000,
    );
    expect(await value('notifier_outbox_pending')).toBe(1);
    expect(await value('notifier_outbox_oldest_pending_seconds')).toBeGreaterThan(0);
    expect(await value('notifier_deliveries_total', { outcome: 'delivered' })).toBe(0);

    status = 200;
    await waitFor(
      async () => (await value('notifier_deliveries_total', { outcome: 'delivered' })) === 1,
      'the delivery counted',
      10_000,
    );
    expect(await value('notifier_outbox_pending')).toBe(0);
    expect(await value('notifier_outbox_oldest_pending_seconds')).toBe(0);
    expect(await registry.metrics()).not.toContain(password);
  });
});
