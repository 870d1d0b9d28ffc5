/** Prometheus metrics of the relay (on the service's /metrics). */
import { Counter, type Registry } from 'prom-client';
import { registerSenderGauges, type SenderSignals } from '../../shared/sender/metrics.js';

export interface RelayMetrics {
  /** Behalf commands by action and outcome: accepted, repeated, reopened, exhausted, confirmed, failed, missed. */
  commands: Counter<'action' | 'outcome'>;
  /** Commands whose window closed before they could be made (a subset of the failures). */
  windowsMissed: Counter<'action'>;
  /**
   * register_relay callback URLs handed to the chain client, by outcome: registered, already_registered, failed
   * (at register_relay and at every re-registration), stored_only (no relay.chainClientRegisterUrl).
   */
  registrations: Counter<'outcome'>;
}

export type RelaySignals = SenderSignals;

const byRegistry = new WeakMap<Registry, RelayMetrics>();

export function relayMetrics(registry: Registry, signals?: RelaySignals): RelayMetrics {
  let metrics = byRegistry.get(registry);
  if (!metrics) {
    metrics = {
      commands: new Counter({
        name: 'relay_commands_total',
        help: 'Behalf commands by action and outcome (accepted, repeated, reopened, exhausted, confirmed, failed; a missed window is failed, and counted in relay_windows_missed_total)',
        labelNames: ['action', 'outcome'],
        registers: [registry],
      }),
      windowsMissed: new Counter({
        name: 'relay_windows_missed_total',
        help: 'Commands whose contract window closed before their transaction was mined',
        labelNames: ['action'],
        registers: [registry],
      }),
      registrations: new Counter({
        name: 'relay_registrations_total',
        help: 'register_relay callback URLs handed to the chain client, by outcome (registered, already_registered, failed, stored_only)',
        labelNames: ['outcome'],
        registers: [registry],
      }),
    };
    if (signals !== undefined) {
      registerSenderGauges(
        registry,
        {
          prefix: 'relay',
          wallet: 'relay',
          transactions: 'relay',
          jobsByStatus: { name: 'relay_commands', help: 'Behalf commands by current status' },
        },
        signals,
      );
    }
    byRegistry.set(registry, metrics);
  }
  return metrics;
}
