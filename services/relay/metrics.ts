/** Prometheus metrics of the relay (on the service's /metrics). */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface RelayMetrics {
  /** Behalf commands by action and outcome: accepted, repeated, reopened, confirmed, failed, missed. */
  commands: Counter<'action' | 'outcome'>;
  /** Commands whose window closed before they could be made (a subset of the failures). */
  windowsMissed: Counter<'action'>;
}

export interface RelaySignals {
  /** The relay wallet's balance in wei (decimal string), when known. */
  balanceWei: () => string | undefined;
  /** Wall-clock ms when the oldest unconfirmed transaction was first signed, if any. */
  oldestUnconfirmedSinceMs: () => number | undefined;
  /** Commands by status, read from the database at scrape time. */
  countByStatus: () => Promise<Record<string, number>>;
  statuses: readonly string[];
}

const byRegistry = new WeakMap<Registry, RelayMetrics>();

export function relayMetrics(registry: Registry, signals?: RelaySignals): RelayMetrics {
  let metrics = byRegistry.get(registry);
  if (!metrics) {
    metrics = {
      commands: new Counter({
        name: 'relay_commands_total',
        help: 'Behalf commands by action and outcome (accepted, repeated, reopened, confirmed, failed, missed)',
        labelNames: ['action', 'outcome'],
        registers: [registry],
      }),
      windowsMissed: new Counter({
        name: 'relay_windows_missed_total',
        help: 'Commands whose contract window closed before their transaction was mined',
        labelNames: ['action'],
        registers: [registry],
      }),
    };
    if (signals !== undefined) {
      new Gauge({
        name: 'relay_wallet_balance_wei',
        help: 'Balance of the relay wallet in wei at the last sender pass (float: precise to ~16 digits)',
        registers: [registry],
        collect() {
          const balance = signals.balanceWei();
          if (balance !== undefined) this.set(Number(balance));
        },
      });
      new Gauge({
        name: 'relay_oldest_unconfirmed_seconds',
        help: 'Age of the oldest signed but unconfirmed relay transaction (0 when none)',
        registers: [registry],
        collect() {
          const since = signals.oldestUnconfirmedSinceMs();
          this.set(since === undefined ? 0 : Math.max(0, (Date.now() - since) / 1000));
        },
      });
      new Gauge({
        name: 'relay_commands',
        help: 'Behalf commands by current status',
        labelNames: ['status'],
        registers: [registry],
        async collect() {
          const counts = await signals.countByStatus().catch(() => undefined);
          if (counts === undefined) return;
          for (const status of signals.statuses) this.set({ status }, counts[status] ?? 0);
        },
      });
    }
    byRegistry.set(registry, metrics);
  }
  return metrics;
}
