import { createServer, type RequestListener } from 'node:http';
import { Gauge, Registry } from 'prom-client';
import { freePort } from '../../shared/net/free-port.js';
import type { ServiceContext } from '../../shared/runtime/service.js';
import { createTestDatabase } from '../../test/support/database.js';
import { serviceContext } from '../../test/support/service-context.js';
import { startNotifier } from './index.js';
import { notifierMigrations } from './migrations.js';

/** A registry where the group `points` is 5,000 messages behind on swap.verdicts. */
export function laggingGroup(): Registry {
  const registry = new Registry();
  new Gauge({
    name: 'bus_consumer_lag',
    help: 'test',
    labelNames: ['group', 'topic', 'partition'],
    registers: [registry],
  }).set({ group: 'points', topic: 'swap.verdicts', partition: '0' }, 5_000);
  return registry;
}

/**
 * A notifier on a fresh database posting to a local receiver (`handle`) at `url(port)`, retrying quickly;
 * `context` replaces parts of the service context (a log to capture, a registry to read).
 */
export async function notifierWithReceiver(options: {
  handle: RequestListener;
  url: (port: number) => string;
  context?: Partial<Pick<ServiceContext, 'log' | 'metrics'>>;
}) {
  const db = await createTestDatabase([notifierMigrations]);
  const port = await freePort();
  const receiver = createServer(options.handle);
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
  const ctx = await serviceContext(db, `n8nUrl = "${options.url(port)}"`, ['n8nUrl']);
  const notifier = await startNotifier(
    { ...ctx, ...options.context },
    { url: ctx.config.n8nUrl!, baseBackoffMs: 50, maxBackoffMs: 100, pollMs: 50 },
  );
  return {
    db,
    ctx,
    async close() {
      await notifier.stop();
      await new Promise((resolve) => receiver.close(resolve));
      await ctx.close();
      await db.drop();
    },
  };
}
