import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { DeliveryObserver, EventBus } from '../bus/port.js';
import type { Logger } from '../logging/logger.js';

/**
 * The process's metrics registry: default process metrics, consumer lag per group and partition, and what the
 * bus's consumers handled, failed and dead-lettered (`observer`, given to the bus).
 */
export function createMetrics(bus: () => EventBus | undefined, log: Logger) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const groups = new Map<string, readonly string[]>();

  new Gauge({
    name: 'bus_consumer_lag',
    help: 'Messages published but not yet committed by a consumer group',
    labelNames: ['group', 'topic', 'partition'],
    registers: [registry],
    async collect() {
      this.reset();
      const current = bus();
      if (!current) return;
      for (const [group, topics] of groups) {
        try {
          for (const p of await current.lag(group, topics)) {
            this.set({ group, topic: p.topic, partition: String(p.partition) }, Number(p.lag));
          }
        } catch (err) {
          log.warn({ group, err: (err as Error).message }, 'could not read consumer lag');
        }
      }
    },
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
      groups.set(group, topics);
    },
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
