/** Prometheus metrics of the relay (on the service's /metrics). */
import { Counter, type Registry } from 'prom-client';

export interface RelayMetrics {
  /** Behalf commands by action and outcome: accepted, repeated, confirmed, failed. */
  commands: Counter<'action' | 'outcome'>;
}

const byRegistry = new WeakMap<Registry, RelayMetrics>();

export function relayMetrics(registry: Registry): RelayMetrics {
  let metrics = byRegistry.get(registry);
  if (!metrics) {
    metrics = {
      commands: new Counter({
        name: 'relay_commands_total',
        help: 'Behalf commands by action and outcome (accepted, repeated, confirmed, failed)',
        labelNames: ['action', 'outcome'],
        registers: [registry],
      }),
    };
    byRegistry.set(registry, metrics);
  }
  return metrics;
}
