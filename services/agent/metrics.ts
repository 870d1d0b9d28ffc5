/** Prometheus metrics of the Agent (on the service's /metrics). */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface AgentMetrics {
  /**
   * Complaints by outcome: at intake `accepted`, `repeated`, `reopened`, `refused`; on chain `confirmed`,
   * `already_on_chain` (DuplicateBidId), `failed`.
   */
  complaints: Counter<'outcome'>;
  /** Refusals at intake by error name (errors.ts). */
  refusals: Counter<'reason'>;
}

export interface AgentSignals {
  balanceWei: () => string | undefined;
  oldestUnconfirmedSinceMs: () => number | undefined;
  countByStatus: () => Promise<Record<string, number>>;
  statuses: readonly string[];
}

const byRegistry = new WeakMap<Registry, AgentMetrics>();

export function agentMetrics(registry: Registry, signals: AgentSignals): AgentMetrics {
  let metrics = byRegistry.get(registry);
  if (metrics) return metrics;
  metrics = {
    complaints: new Counter({
      name: 'agent_complaints_total',
      help: 'Complaints by outcome (accepted, repeated, reopened, refused, confirmed, already_on_chain, failed)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    refusals: new Counter({
      name: 'agent_complaint_refusals_total',
      help: 'Complaints refused at intake, by error name',
      labelNames: ['reason'],
      registers: [registry],
    }),
  };
  new Gauge({
    name: 'agent_submissions',
    help: 'Complaint submissions by current status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const counts = await signals.countByStatus().catch(() => undefined);
      if (counts === undefined) return;
      for (const status of signals.statuses) this.set({ status }, counts[status] ?? 0);
    },
  });
  new Gauge({
    name: 'agent_wallet_balance_wei',
    help: 'Balance of the Agent wallet in wei at the last sender pass (float: precise to ~16 digits)',
    registers: [registry],
    collect() {
      const balance = signals.balanceWei();
      if (balance !== undefined) this.set(Number(balance));
    },
  });
  new Gauge({
    name: 'agent_oldest_unconfirmed_seconds',
    help: 'Age of the oldest signed but unconfirmed complaint transaction (0 when none)',
    registers: [registry],
    collect() {
      const since = signals.oldestUnconfirmedSinceMs();
      this.set(since === undefined ? 0 : Math.max(0, (Date.now() - since) / 1000));
    },
  });
  byRegistry.set(registry, metrics);
  return metrics;
}
