/**
 * Conditions worth a notification that are states, not events: failed or stuck submissions (relay, Agent),
 * a lagging connector or consumer, and messages a consumer group dead-lettered, read from the metrics registry
 * every interval. Each condition notifies once when it starts (a new failed count, a new episode, more dead
 * letters than at the last look), not on every look.
 */
import type { Registry } from 'prom-client';
import { deadLetterTopic } from '../../shared/bus/port.js';
import { pipelineHealth } from '../../shared/runtime/pipeline-health.js';
import type { Notification } from './outbox.js';

export interface WatchLimits {
  /** A sent transaction unconfirmed for longer than this is stuck. */
  stuckSeconds: number;
  /** The Connector this many blocks behind its chain client is lagging. */
  lagBlocks: number;
  /** A consumer group this many messages behind is lagging. */
  lagMessages: number;
}

export const DEFAULT_LIMITS: WatchLimits = { stuckSeconds: 600, lagBlocks: 50, lagMessages: 1_000 };

export class HealthWatch {
  private readonly active = new Set<string>();
  /** Dead letters per group and topic at the last look (the counter counts since this process started). */
  private readonly deadLetters = new Map<string, number>();

  constructor(
    private readonly registry: Registry,
    private readonly limits: WatchLimits = DEFAULT_LIMITS,
  ) {}

  /** The notifications that are due now. */
  async look(nowMs = Date.now()): Promise<Notification[]> {
    const health = await pipelineHealth(this.registry);
    const out: Notification[] = [];
    // Failed counts: the id carries the count, so a restart with the same count does not notify again.
    for (const [service, byStatus] of Object.entries(health.commands)) {
      const failed = byStatus.failed ?? 0;
      if (failed > 0)
        out.push({
          id: `submission_failed:${service}:${failed}`,
          kind: 'submission_failed',
          payload: { service, failed, byStatus },
        });
    }
    const episode = (key: string, holds: boolean, make: () => Notification) => {
      if (!holds) return void this.active.delete(key);
      if (this.active.has(key)) return;
      this.active.add(key);
      const n = make();
      out.push({ ...n, id: `${n.id}:${Math.floor(nowMs / 1000)}` });
    };
    for (const [service, seconds] of Object.entries(health.oldestUnconfirmedSeconds))
      episode(`stuck:${service}`, seconds > this.limits.stuckSeconds, () => ({
        id: `submission_stuck:${service}`,
        kind: 'submission_stuck',
        payload: { service, oldestUnconfirmedSeconds: seconds, limitSeconds: this.limits.stuckSeconds },
      }));
    for (const c of health.chains)
      episode(`chain:${c.chain}`, (c.lag_blocks ?? 0) > this.limits.lagBlocks, () => ({
        id: `connector_lagging:${c.chain}`,
        kind: 'connector_lagging',
        payload: {
          chain: c.chain,
          lagBlocks: c.lag_blocks,
          chainClientHeight: c.chain_client_height,
          connectorHeight: c.connector_height,
        },
      }));
    for (const g of health.consumers)
      episode(`group:${g.group}`, g.lag > this.limits.lagMessages, () => ({
        id: `consumer_lagging:${g.group}`,
        kind: 'connector_lagging',
        payload: { group: g.group, lagMessages: g.lag },
      }));
    // Each message no consumer could apply: one notification per look that finds more of them. The id carries
    // the time, as the count starts again with the process.
    for (const { group, topic, count } of await deadLettered(this.registry)) {
      const key = `${group} ${topic}`;
      const before = this.deadLetters.get(key) ?? 0;
      this.deadLetters.set(key, count);
      if (count > before)
        out.push({
          id: `message_dead_lettered:${group}:${topic}:${count}:${Math.floor(nowMs / 1000)}`,
          kind: 'message_dead_lettered',
          payload: { group, topic, deadLetterTopic: deadLetterTopic(topic), new: count - before, count },
        });
    }
    return out;
  }
}

/** bus_dead_lettered_total by group and topic, as the bus's delivery observer counts them. */
async function deadLettered(
  registry: Registry,
): Promise<Array<{ group: string; topic: string; count: number }>> {
  const metric = registry.getSingleMetric('bus_dead_lettered_total');
  if (!metric) return [];
  const { values } = await metric.get();
  return values.map((v) => ({
    group: String(v.labels.group),
    topic: String(v.labels.topic),
    count: v.value,
  }));
}
