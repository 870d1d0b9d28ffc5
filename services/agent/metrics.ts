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
  /**
   * Complaints whose agreement signatures were checked before gas (`proven`), or could not be (`unchecked`: a
   * chain of the swap not in [[chainClients]]); the unproven are refusals (UNPROVEN_AGREEMENT).
   */
  agreementChecks: Counter<'result'>;
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
    agreementChecks: new Counter({
      name: 'agent_complaint_agreement_checks_total',
      help: 'Complaints whose agreement signatures were checked before gas (proven) or could not be (unchecked: a chain of the swap is not in [[chainClients]])',
      labelNames: ['result'],
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
