/** Prometheus metrics of the n8n outbox (on the service's /metrics): what waits, for how long, and attempts. */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Queryable } from '../../shared/db/pool.js';
import { rowsOrNothing } from '../../shared/runtime/metrics.js';
import { singleFlight } from '../../shared/runtime/single-flight.js';

export interface NotifierMetrics {
  /** Delivery attempts by outcome (a 2xx answer, or anything else). */
  deliveries: Counter<'outcome'>;
}

// One set per registry: a notifier restarted in the same process (tests) must not register them twice.
const byRegistry = new WeakMap<Registry, NotifierMetrics>();

/**
 * Notifications not delivered yet and the age of the oldest, over the partial index of undelivered rows
 * (delivered ones are kept as the record for notifier.keepDeliveredDays); undefined when the database cannot
 * be read.
 */
export async function outboxBacklog(
  db: Queryable,
): Promise<{ pending: number; oldestSeconds: number } | undefined> {
  const rows = await rowsOrNothing(
    db.query<{ n: string; age: number | null }>(
      `SELECT count(*) AS n, EXTRACT(EPOCH FROM now() - min(created_at))::float8 AS age
         FROM notifier_outbox WHERE delivered_at IS NULL`,
    ),
  );
  return rows && { pending: Number(rows[0]?.n ?? 0), oldestSeconds: Math.max(0, Number(rows[0]?.age ?? 0)) };
}

export function notifierMetrics(registry: Registry, db: Queryable): NotifierMetrics {
  let metrics = byRegistry.get(registry);
  if (metrics) return metrics;
  // Read at each scrape; both gauges are collected at once and share one read, not one query each.
  const pendingNow = singleFlight(() => outboxBacklog(db));
  new Gauge({
    name: 'notifier_outbox_pending',
    help: 'Notifications in the outbox not delivered yet',
    registers: [registry],
    async collect() {
      const now = await pendingNow();
      if (now) this.set(now.pending);
    },
  });
  new Gauge({
    name: 'notifier_outbox_oldest_pending_seconds',
    help: 'Seconds since the oldest undelivered notification was queued (0 when none)',
    registers: [registry],
    async collect() {
      const now = await pendingNow();
      if (now) this.set(now.oldestSeconds);
    },
  });
  const deliveries = new Counter({
    name: 'notifier_deliveries_total',
    help: 'Delivery attempts to n8nUrl, by outcome (delivered: a 2xx answer; failed: anything else)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  // Both series exist from the start, so rate() and increase() see the first failure.
  for (const outcome of ['delivered', 'failed']) deliveries.inc({ outcome }, 0);
  metrics = { deliveries };
  byRegistry.set(registry, metrics);
  return metrics;
}
