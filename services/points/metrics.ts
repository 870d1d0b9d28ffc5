/** Prometheus metrics of Points (on the service's /metrics). */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface PointsMetrics {
  /** Messages handled by the projections: applied, duplicate (already applied), ignored (not for Points). */
  events: Counter<'topic' | 'outcome'>;
  /**
   * KYC / DID lookups: cached, fetched, failed, refused (a 4xx about one key: stale for that key only), skipped
   * (service in back-off: last known value, stale).
   */
  lookups: Counter<'service' | 'outcome'>;
  /** Query latency by route and status. */
  queries: Histogram<'route' | 'status'>;
  /** 1 while the score cache hears about every change; 0 while it is bypassed (its LISTEN connection lost). */
  cacheListening: Gauge;
}

const byRegistry = new WeakMap<Registry, PointsMetrics>();

export function pointsMetrics(registry: Registry): PointsMetrics {
  let metrics = byRegistry.get(registry);
  if (!metrics) {
    metrics = {
      events: new Counter({
        name: 'points_events_total',
        help: 'Messages handled by the Points projections by topic and outcome (applied, duplicate, ignored)',
        labelNames: ['topic', 'outcome'],
        registers: [registry],
      }),
      lookups: new Counter({
        name: 'points_lookups_total',
        help: 'KYC and DID lookups by service and outcome (cached, fetched, failed, refused key, skipped while down)',
        labelNames: ['service', 'outcome'],
        registers: [registry],
      }),
      queries: new Histogram({
        name: 'points_query_seconds',
        help: 'Points query latency by route and HTTP status',
        labelNames: ['route', 'status'],
        buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
        registers: [registry],
      }),
      cacheListening: new Gauge({
        name: 'points_score_cache_listening',
        help: '1 while the score cache hears about every change (its LISTEN connection is up); 0 while it is bypassed and every score is read from the database',
        registers: [registry],
      }),
    };
    byRegistry.set(registry, metrics);
  }
  return metrics;
}
