import { createServer, type RequestListener, type ServerResponse } from 'node:http';
import { pino } from 'pino';
import { Gauge, Registry } from 'prom-client';
import { freePort } from '../../shared/net/free-port.js';
import type { ServiceContext } from '../../shared/runtime/service.js';
import { createTestDatabase } from '../../test/support/database.js';
import { serviceContext } from '../../test/support/service-context.js';
import { startNotifier } from './index.js';
import { notifierMigrations } from './migrations.js';
import { enqueue, OutboxSender, type OutboxSenderOptions } from './outbox.js';

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

/**
 * An OutboxSender (not started) on a fresh database, posting to a local receiver: `answer` writes the answer to
 * the nth post (1-based) of the notification `id`. The rows `ids` are queued in that order; `seen` lists the
 * ids posted, `logs` the sender's log lines (info and up).
 */
export async function outboxWithReceiver(options: {
  ids: readonly string[];
  answer: (id: string, post: number, response: ServerResponse) => void;
  sender: Omit<OutboxSenderOptions, 'pool' | 'url' | 'log'>;
}) {
  const db = await createTestDatabase([notifierMigrations]);
  const seen: string[] = [];
  const logs: string[] = [];
  const port = await freePort();
  const receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const { id } = JSON.parse(body) as { id: string };
      seen.push(id);
      options.answer(id, seen.length, response);
    });
  });
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
  for (const id of options.ids) await enqueue(db.pool, { id, kind: 'violation', payload: {} });
  const sender = new OutboxSender({
    ...options.sender,
    pool: db.pool,
    url: `http://127.0.0.1:${port}/webhook`,
    log: pino({ level: 'info' }, { write: (line: string) => void logs.push(line) }),
  });
  return {
    db,
    sender,
    seen,
    logs,
    async close() {
      await sender.stop();
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
      await db.drop();
    },
  };
}
