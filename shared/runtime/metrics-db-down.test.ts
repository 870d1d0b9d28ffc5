import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Pool } from '../db/pool.js';
import { classifierMetrics } from '../../services/classifier/metrics.js';
import { classifierTables } from '../../services/classifier/tables.js';
import { notifierMetrics } from '../../services/notifier/metrics.js';

/** A pool whose every query fails, as while the database is down. */
const down = { query: async () => Promise.reject(new Error('connect ECONNREFUSED')) } as unknown as Pool;

describe('gauges read from the database at scrape time, while it is down', () => {
  it('keep /metrics answering: every other figure of the process is still there', async () => {
    const registry = new Registry();
    classifierMetrics(registry, down, classifierTables());
    notifierMetrics(registry, down);
    const text = await registry.metrics();
    for (const name of [
      'classifier_pending_swaps',
      'classifier_oldest_pending_age_seconds',
      'classifier_held_heights',
      'classifier_dead_lettered_events',
      'notifier_outbox_pending',
      'notifier_outbox_oldest_pending_seconds',
      'classifier_verdicts_total',
      'notifier_deliveries_total',
    ])
      expect(text).toContain(`# TYPE ${name}`);
  });
});
