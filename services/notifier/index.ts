/**
 * n8n notifications (DESIGN §5.7; runs whenever `n8nUrl` is set): decided violations and complaint outcomes
 * from the bus, failed or stuck submissions and lagging consumers from the metrics registry, posted to
 * `n8nUrl` from an outbox table with retries and back-off (outbox.ts).
 */
import type { ServiceContext, ServiceDefinition, RunningService } from '../../shared/runtime/service.js';
import { NOTIFIER_GROUP, NOTIFIER_TOPICS, subscribeNotifier } from './consumer.js';
import { notifierMigrations } from './migrations.js';
import { enqueue, OutboxSender } from './outbox.js';
import { DEFAULT_LIMITS, HealthWatch, type WatchLimits } from './watch.js';

export interface NotifierOptions {
  url: string;
  watchIntervalMs?: number;
  limits?: WatchLimits;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  pollMs?: number;
}

export async function startNotifier(
  context: Pick<ServiceContext, 'bus' | 'db' | 'log' | 'metrics'>,
  options: NotifierOptions,
): Promise<RunningService> {
  const log = context.log;
  const sender = new OutboxSender({
    pool: context.db,
    url: options.url,
    log,
    baseBackoffMs: options.baseBackoffMs,
    maxBackoffMs: options.maxBackoffMs,
    pollMs: options.pollMs,
  });
  const subscription = await subscribeNotifier({
    bus: context.bus,
    pool: context.db,
    onQueued: () => sender.wake(),
  });
  const watch = new HealthWatch(context.metrics, options.limits ?? DEFAULT_LIMITS);
  const timer = setInterval(() => {
    watch
      .look()
      .then(async (due) => {
        for (const n of due) await enqueue(context.db, n);
        if (due.length > 0) sender.wake();
      })
      .catch((err: Error) => log.warn({ err: err.message }, 'notifier watch failed'));
  }, options.watchIntervalMs ?? 10_000);
  sender.start();
  return {
    async stop() {
      clearInterval(timer);
      await subscription.stop();
      await sender.stop();
    },
  };
}

export const notifierService: ServiceDefinition = {
  name: 'notifier',
  sections: ['n8nUrl'],
  migrations: [notifierMigrations],
  async start(context) {
    context.trackConsumerGroup(NOTIFIER_GROUP, NOTIFIER_TOPICS);
    return startNotifier(context, { url: context.config.n8nUrl! });
  },
};
