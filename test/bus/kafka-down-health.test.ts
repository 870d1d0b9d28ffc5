import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import type { Subscription } from '../../shared/bus/port.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createHttpServer } from '../../shared/runtime/http.js';
import { createMetrics } from '../../shared/runtime/metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { kafkaProblem, startKafka, type KafkaBroker } from '../support/kafka.js';
import { waitFor } from '../support/wait.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('health and metrics with the Kafka broker down', kafka.skipReason);

/**
 * The broker goes away under a running process: /health said ok (it looked at the database only), and each
 * scrape of /metrics asked the broker for every group's lag through kafkajs's retries, about 13 s for five
 * groups, past Prometheus's 10 s timeout, so every figure of the process was lost with it.
 */
describe.skipIf(kafka.skipReason)('health and metrics with the Kafka broker down', () => {
  const log = createLogger({ level: 'silent' });
  let db: TestDatabase;
  let broker: KafkaBroker | undefined;
  let bus: KafkaBus;
  const subscriptions: Subscription[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    if (await kafkaProblem()) return;
    broker = await startKafka(); // its own: this test stops it
    bus = new KafkaBus({
      brokers: broker.brokers,
      clientId: 'down-health',
      log,
      pool: db.pool,
      connectionString: db.url,
    });
    await bus.ensureTopics([{ name: 'down.a', partitions: 2, retentionMs: null }]);
  }, 240_000);
  afterAll(async () => {
    for (const s of subscriptions) await s.stop().catch(() => undefined);
    await bus?.close().catch(() => undefined);
    await broker?.close();
    await db?.drop();
  }, 120_000);

  it('says degraded on /health, and /metrics answers in time with the last lag figures', async () => {
    if (!broker) return;
    const metrics = createMetrics(
      () => bus,
      log,
      () => db.pool,
    );
    for (const group of ['classifier', 'points', 'notifier', 'agent-submitter', 'relay-97']) {
      subscriptions.push(await bus.subscribe({ group, topics: ['down.a'], handler: async () => undefined }));
      metrics.trackConsumerGroup(group, ['down.a']);
    }
    const app = createHttpServer({
      service: 'down',
      log,
      metrics: metrics.registry,
      db: db.pool,
      healthChecks: { bus: metrics.busHealth },
    });
    const series = (text: string) => text.split('\n').filter((l) => l.startsWith('bus_consumer_lag{')).length;
    const scrape = async () => {
      const started = Date.now();
      const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
      return { ms: Date.now() - started, series: series(text), text };
    };
    expect((await scrape()).series).toBe(10);
    expect((await app.inject({ method: 'GET', url: '/health' })).json()).toMatchObject({
      status: 'ok',
      checks: { bus: { ok: true } },
    });

    await broker.stop(0);
    await waitFor(
      async () => {
        const { ms, series: kept } = await scrape();
        expect(ms).toBeLessThan(5_000);
        expect(kept).toBe(10);
        return (await app.inject({ method: 'GET', url: '/health' })).json().status === 'degraded';
      },
      'health to say the bus does not answer',
      90_000,
    );
    const health = await app.inject({ method: 'GET', url: '/health' });
    expect(health.statusCode).toBe(200);
    expect(health.json().checks.bus).toMatchObject({ ok: false, status: 'degraded' });
    expect(health.json().checks.bus.error).toMatch(/^the event bus does not answer/);
    expect((await scrape()).text).toMatch(/^bus_consumer_lag_age_seconds \d+/m);

    await broker.start();
    await waitFor(
      async () => (await app.inject({ method: 'GET', url: '/health' })).json().status === 'ok',
      'health to say ok again',
      90_000,
    );
  }, 300_000);
});
