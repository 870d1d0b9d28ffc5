/** Prometheus metrics of the Agent (on the service's /metrics). */
import { Counter, type Registry } from 'prom-client';
import { registerSenderGauges, type SenderSignals } from '../../shared/sender/metrics.js';

export interface AgentMetrics {
  /**
   * Complaints by outcome: at intake `accepted`, `repeated`, `reopened`, `replaced` (another complainant's
   * failed complaint for the bid replaced), `refused`; on chain `confirmed`,
   * `already_on_chain` (DuplicateBidId), `failed`.
   */
  complaints: Counter<'outcome'>;
  /** Refusals at intake by error name (errors.ts). */
  refusals: Counter<'reason'>;
}

export type AgentSignals = SenderSignals;

const byRegistry = new WeakMap<Registry, AgentMetrics>();

export function agentMetrics(registry: Registry, signals: AgentSignals): AgentMetrics {
  let metrics = byRegistry.get(registry);
  if (metrics) return metrics;
  metrics = {
    complaints: new Counter({
      name: 'agent_complaints_total',
      help: 'Complaints by outcome (accepted, repeated, reopened, replaced, refused, confirmed, already_on_chain, failed)',
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
  registerSenderGauges(
    registry,
    {
      prefix: 'agent',
      wallet: 'Agent',
      transactions: 'complaint',
      jobsByStatus: { name: 'agent_submissions', help: 'Complaint submissions by current status' },
    },
    signals,
  );
  byRegistry.set(registry, metrics);
  return metrics;
}
