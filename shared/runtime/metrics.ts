import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { EventBus } from '../bus/port.js';
import type { Logger } from '../logging/logger.js';

/** The process's metrics registry, with default process metrics and consumer lag per group and partition. */
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

  return {
    registry,
    trackConsumerGroup(group: string, topics: readonly string[]) {
      groups.set(group, topics);
    },
  };
}
