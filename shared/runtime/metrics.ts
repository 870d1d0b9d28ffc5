import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { DeliveryObserver, EventBus } from '../bus/port.js';
import { lostConnections, type Queryable } from '../db/pool.js';
import type { Logger } from '../logging/logger.js';
import { LagReader } from './lag-reader.js';
import { singleFlight } from './single-flight.js';

/**
 * The process's metrics registry: default process metrics, consumer lag per group and partition, and what the
 * bus's consumers handled, failed and dead-lettered (`observer`, given to the bus).
 */
export function createMetrics(
  bus: () => EventBus | undefined,
  log: Logger,
  /** The database the outbox is in (undefined until the infrastructure started). */
  db: () => Queryable | undefined = () => undefined,
) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const lag = new LagReader(bus, log);

  new Gauge({
    name: 'bus_consumer_lag',
    help: 'Messages published but not yet committed by a consumer group',
    labelNames: ['group', 'topic', 'partition'],
    registers: [registry],
    async collect() {
      const lags = await lag.lags();
      // Cleared and set in one step after the read: a scrape overlapping another never sees it half done.
      this.reset();
      for (const p of lags)
        this.set({ group: p.group, topic: p.topic, partition: String(p.partition) }, Number(p.lag));
    },
  });
  new Gauge({
    name: 'bus_consumer_lag_age_seconds',
    help: 'Seconds since bus_consumer_lag was last read from the bus (it keeps its last figures while the bus does not answer)',
    registers: [registry],
    collect() {
      const age = lag.ageSeconds;
      if (age !== undefined) this.set(age);
    },
  });
  // On Kafka every message leaves through bus_outbox: what waits there is not in any consumer's lag yet.
  new Gauge({
    name: 'bus_outbox_messages',
    help: 'Messages written to the outbox and not yet sent to Kafka (0 on the postgres log)',
    registers: [registry],
    async collect() {
      const rows = await outboxRows();
      if (rows) this.set(Number(rows[0]!.messages));
    },
  });
  new Gauge({
    name: 'bus_outbox_oldest_seconds',
    help: 'Age of the oldest message waiting in the outbox (0 when none)',
    registers: [registry],
    async collect() {
      const rows = await outboxRows();
      if (rows) this.set(Number(rows[0]!.oldest));
    },
  });
  // One read for both outbox gauges of a scrape.
  const outboxRows = singleFlight(async () => {
    const pool = db();
    if (!pool) return undefined;
    return rowsOrNothing(
      pool.query<{ messages: string; oldest: string }>(
        `SELECT count(*) AS messages,
                COALESCE(extract(epoch FROM now() - min(created_at)), 0)::bigint AS oldest
           FROM bus_outbox`,
      ),
    );
  });

  // What the bus's consumers did, per group and topic (the observer below is what the bus tells).
  const perGroupAndTopic = (name: string, help: string) =>
    new Counter({ name, help, labelNames: ['group', 'topic'], registers: [registry] });
  const handled = perGroupAndTopic(
    'bus_messages_handled_total',
    'Messages handled and committed by a consumer group',
  );
  const batchSize = new Histogram({
    name: 'bus_handler_batch_messages',
    help: 'Messages per handler call that was committed (1 for a message handled alone)',
    labelNames: ['group'],
    buckets: [1, 10, 50, 100, 250, 500, 1_000, 5_000],
    registers: [registry],
  });
  const failures = perGroupAndTopic(
    'bus_handler_failures_total',
    'Handler calls that failed (retried, delivered one by one, or dead-lettered)',
  );
  const deadLettered = perGroupAndTopic(
    'bus_dead_lettered_total',
    'Messages a consumer group moved to the dead-letter topic of their topic',
  );
  // Alert on any increase: a message Kafka refused waits in bus_outbox_refused for the operator (README).
  const outboxRefused = new Counter({
    name: 'bus_outbox_refused_total',
    help: 'Outbox messages the Kafka broker refused for good (e.g. too large), set aside in bus_outbox_refused',
    labelNames: ['topic'],
    registers: [registry],
  });
  // Alert on any increase: the network between the process and its database drops connections silently.
  new Counter({
    name: 'db_connections_lost_total',
    help: 'Pooled database connections ended by force because their statement would never be answered (dropped silently on the way; see shared/db/pool-watch.ts)',
    registers: [registry],
    collect() {
      const pool = db();
      const lost = pool === undefined ? undefined : lostConnections(pool);
      if (lost === undefined) return;
      this.reset();
      this.inc(lost);
    },
  });
  const observer: DeliveryObserver = {
    handled(group, topic, count) {
      handled.inc({ group, topic }, count);
      batchSize.observe({ group }, count);
    },
    failed: (group, topic) => failures.inc({ group, topic }),
    deadLettered: (group, topic) => deadLettered.inc({ group, topic }),
    outboxRefused: (topic) => outboxRefused.inc({ topic }),
  };

  return {
    registry,
    observer,
    trackConsumerGroup(group: string, topics: readonly string[]) {
      lag.track(group, topics);
    },
    /** /health's `bus` check: degraded while the event bus does not answer. */
    busHealth: () => lag.health(),
  };
}

/**
 * The rows of a query read by a gauge at scrape time, or undefined when it failed (the database is down): the
 * gauge then keeps its last value, since a collect() that throws fails the whole /metrics answer, every other
 * figure of the process with it, when the operator needs them most.
 */
export async function rowsOrNothing<R>(query: Promise<{ rows: R[] }>): Promise<R[] | undefined> {
  return query.then(
    (result) => result.rows,
    () => undefined,
  );
}
