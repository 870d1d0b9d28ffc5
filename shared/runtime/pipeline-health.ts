/**
 * The pipeline's health from the process's metrics registry: the services that share this process (with
 * `npm start`, all of them; a single-service process sees only its own figures). Read by the dashboard
 * (GET /dashboard/pipeline) and the notifier's watch.
 */
import type { Registry } from 'prom-client';

export interface PipelineHealth {
  chains: Array<{
    chain: string;
    chain_client_height?: number;
    connector_height?: number;
    lag_blocks?: number;
  }>;
  /** Per consumer group: messages not yet committed, and since this process started, handled and dead-lettered. */
  consumers: Array<{ group: string; lag: number; handled: number; deadLettered: number }>;
  commands: Record<string, Record<string, number>>;
  /** Per sending service (relay, agent): failures of its jobs so far, from its database; never decreases. */
  failures: Record<string, number>;
  classifier: { pending: Record<string, number>; oldest_pending_age_seconds?: number };
  /** Per sending service (relay, agent): age of its oldest sent but unconfirmed transaction. */
  oldestUnconfirmedSeconds: Record<string, number>;
  /**
   * Per sending service and status before signing (Agent: accepted, scheduled; relay: accepted): how long the
   * job longest in it has waited there (0: none waits).
   */
  oldestWaitingSeconds: Record<string, Record<string, number>>;
}

type MetricJson = { name: string; values: Array<{ value: number; labels: Record<string, string | number> }> };

/** Heights and lag per chain, consumers' lag and deliveries per group, commands by status, from the registry. */
export async function pipelineHealth(registry: Registry): Promise<PipelineHealth> {
  const metrics = (await registry.getMetricsAsJSON()) as unknown as MetricJson[];
  const values = (name: string) => metrics.find((m) => m.name === name)?.values ?? [];
  const chains = new Map<string, PipelineHealth['chains'][number]>();
  const chain = (id: string) => chains.get(id) ?? chains.set(id, { chain: id }).get(id)!;
  for (const v of values('chain_client_height'))
    chain(String(v.labels.instance)).chain_client_height = v.value;
  for (const v of values('connector_height'))
    if (v.labels.stream === 'swap') chain(String(v.labels.chain)).connector_height = v.value;
  for (const c of chains.values())
    if (c.chain_client_height !== undefined && c.connector_height !== undefined)
      c.lag_blocks = Math.max(0, c.chain_client_height - c.connector_height);
  // No chain client in this process (the Otmoic chain client is a program of its own, or runs in another
  // container): the Connector's own lag behind the heights the chain client reported, or a lagging Connector
  // would never show here nor be told (DESIGN §5.7).
  for (const v of values('connector_lag_blocks'))
    if (v.labels.stream === 'swap') {
      const c = chain(String(v.labels.chain));
      if (c.chain_client_height === undefined) c.lag_blocks = Math.max(0, v.value);
    }

  const consumers = new Map<string, PipelineHealth['consumers'][number]>();
  const consumer = (group: string) =>
    consumers.get(group) ?? consumers.set(group, { group, lag: 0, handled: 0, deadLettered: 0 }).get(group)!;
  for (const v of values('bus_consumer_lag')) consumer(String(v.labels.group)).lag += v.value;
  for (const v of values('bus_messages_handled_total')) consumer(String(v.labels.group)).handled += v.value;
  for (const v of values('bus_dead_lettered_total')) consumer(String(v.labels.group)).deadLettered += v.value;

  // Every service's "…_commands{status}" / "…_submissions{status}" gauge (relay_commands, agent_submissions).
  const commands: PipelineHealth['commands'] = {};
  for (const m of metrics) {
    const match = /^([a-z]+)_(?:commands|complaints|submissions)$/.exec(m.name);
    if (!match || !m.values.some((v) => v.labels.status !== undefined)) continue;
    const byStatus = (commands[match[1]!] ??= {});
    for (const v of m.values)
      byStatus[String(v.labels.status)] = (byStatus[String(v.labels.status)] ?? 0) + v.value;
  }

  const failures: PipelineHealth['failures'] = {};
  for (const m of metrics) {
    const match = /^([a-z]+)_job_failures$/.exec(m.name);
    if (match && m.values[0] !== undefined) failures[match[1]!] = m.values[0].value;
  }

  const oldestWaitingSeconds: PipelineHealth['oldestWaitingSeconds'] = {};
  for (const m of metrics) {
    const match = /^([a-z]+)_oldest_waiting_seconds$/.exec(m.name);
    if (!match) continue;
    const byStatus = (oldestWaitingSeconds[match[1]!] ??= {});
    for (const v of m.values) byStatus[String(v.labels.status)] = v.value;
  }

  const pending: Record<string, number> = {};
  for (const v of values('classifier_pending_swaps')) pending[String(v.labels.waiting_for)] = v.value;
  return {
    chains: [...chains.values()].sort((a, b) => a.chain.localeCompare(b.chain)),
    consumers: [...consumers.values()].sort((a, b) => a.group.localeCompare(b.group)),
    commands,
    failures,
    oldestUnconfirmedSeconds: Object.fromEntries(
      metrics
        .filter((m) => /^[a-z]+_oldest_unconfirmed_seconds$/.test(m.name) && m.values[0] !== undefined)
        .map((m) => [m.name.split('_')[0]!, m.values[0]!.value]),
    ),
    oldestWaitingSeconds,
    classifier: {
      pending,
      oldest_pending_age_seconds: values('classifier_oldest_pending_age_seconds')[0]?.value,
    },
  };
}
