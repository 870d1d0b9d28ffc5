/**
 * Conditions worth a notification that are states, not events: failed, waiting or stuck submissions (relay, Agent)
 * and a lagging connector or consumer, read from the metrics registry every interval, and messages in
 * dead-letter topics, read from the bus. Each condition notifies once when it starts (a new failures total, a
 * new episode, a new dead-letter total), not on every look. A condition counts as told only once its
 * notification is in the outbox (`commit`), so one whose write failed is offered again at the next look.
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
  /**
   * An episode ends once its condition has been false this long: a figure hovering at its limit (a lag of
   * 1,001, then 999, …) is one episode, not one notification every other look.
   */
  clearAfterSeconds: number;
}

export const DEFAULT_LIMITS: WatchLimits = {
  stuckSeconds: 600,
  lagBlocks: 50,
  lagMessages: 1_000,
  clearAfterSeconds: 300,
};

/** A notification that is due, and what marks its condition as told (call once it is in the outbox). */
export interface Due {
  notification: Notification;
  commit(): void;
}

/**
 * What was last told of a topic's dead letters: their total, in the `epoch` (how many times one of its
 * dead-letter topics was cleared: an operator deleted it, and Kafka counts from 0 again), and the messages in
 * each of its dead-letter topics then (absent in notifications older than levels).
 */
export interface ToldDeadLetters {
  epoch: number;
  total: number;
  levels?: Record<string, number>;
}

/** A topic's dead letters as the bus shows them (deadLettersSoFar). */
export interface DeadLetterCount {
  topic: string;
  /** Dead letters so far, over every level, without those a redrive sent back up a level. */
  total: number;
  /** Messages in each of its dead-letter topics (`<topic>.dlq`, `<topic>.dlq.dlq`, …), by name. */
  levels?: Record<string, number>;
}

/** The dead-letter topics of `topic`, level by level: its own, its redrive's, and that one's redrive's. */
export function deadLetterLevels(topic: string, depth = 3): string[] {
  const levels = [deadLetterTopic(topic)];
  while (levels.length < depth) levels.push(deadLetterTopic(levels.at(-1)!));
  return levels;
}

/**
 * A topic's dead letters so far, from the messages in its dead-letter topics (`totals[0]` in `<topic>.dlq`,
 * `totals[1]` in `<topic>.dlq.dlq`, …) and how many of each level its redrive took (`redriven[k]` of level
 * k; `npm run dead-letters -- redrive <topic>.dlq` takes level 1's and sends them back to level 0). Each
 * message that arrived in a level counts, except those a redrive sent back up from the level below: they
 * were counted when they first arrived. What level k+1's redrive took went back to level k, except what it
 * moved on to level k+2, counted there as arrived; so it is worked out from the deepest level up.
 *
 * Read the totals before the redrive positions: a redrive sends a dead letter back only once its position
 * is committed, so the sum can come out lower for a moment (a redrive in flight), never higher.
 */
export function deadLettersSoFar(totals: readonly number[], redriven: readonly number[]): number {
  const arrived: number[] = [];
  for (let k = totals.length - 1; k >= 0; k--) {
    const sentBack = (redriven[k + 1] ?? 0) - (arrived[k + 2] ?? 0);
    arrived[k] = totals[k]! - sentBack;
  }
  return Math.max(
    0,
    arrived.reduce((sum, n) => sum + n, 0),
  );
}

/**
 * Whether a dead-letter topic of the topic was cleared since `told`: one of its levels holds fewer messages
 * (Kafka counts from 0 again), which nothing else does. Without the levels told (an older notification), a
 * total lower than told.
 */
function cleared(told: ToldDeadLetters, count: DeadLetterCount): boolean {
  if (!told.levels || !count.levels) return count.total < told.total;
  return Object.entries(told.levels).some(([name, n]) => (count.levels![name] ?? 0) < n);
}

/** The id of a dead-letter total: epoch 0 as before epochs existed (`…:<total>`), later `…:<epoch>.<total>`. */
export function deadLetterNotificationId(deadLetterTopicName: string, told: ToldDeadLetters): string {
  const count = told.epoch === 0 ? `${told.total}` : `${told.epoch}.${told.total}`;
  return `message_dead_lettered:${deadLetterTopicName}:${count}`;
}

/** The ToldDeadLetters of an id deadLetterNotificationId made (undefined: not one). */
export function toldOf(id: string): ToldDeadLetters | undefined {
  const match = /:(?:(\d+)\.)?(\d+)$/.exec(id);
  return match ? { epoch: Number(match[1] ?? 0), total: Number(match[2]) } : undefined;
}

export class HealthWatch {
  /** Episodes told, and since when (ms) each one's condition has been false, if it is. */
  private readonly active = new Map<string, { falseSinceMs?: number }>();
  /** What was told of each topic's dead-letter topic (read from `lastTold` at the first look). */
  private readonly deadLettered = new Map<string, ToldDeadLetters>();

  constructor(
    private readonly registry: Registry,
    private readonly limits: WatchLimits = DEFAULT_LIMITS,
    /** The dead letters of each topic (none: no dead-letter watch). */
    private readonly deadLetters: () => Promise<DeadLetterCount[]> = async () => [],
    /** The dead-letter read failed: that part of the look is skipped, the rest goes on. */
    private readonly onDeadLettersUnread: (err: Error) => void = () => undefined,
    /** What the newest notification of a dead-letter topic told (kept however old: outbox.ts). */
    private readonly lastTold: (
      deadLetterTopicName: string,
    ) => Promise<ToldDeadLetters | undefined> = async () => undefined,
  ) {}

  /** The notifications that are due now; nothing is marked as told until its `commit`. */
  async look(nowMs = Date.now()): Promise<Due[]> {
    // The bus unreachable (Kafka down) must not silence the alerts read from the registry: only the dead
    // letters wait for the next look, their totals left as they were.
    const deadLetters = await this.deadLetters().catch((err: Error) => {
      this.onDeadLettersUnread(err);
      return [];
    });
    const health = await pipelineHealth(this.registry);
    const out: Due[] = [];
    const none = () => undefined;
    // Failures so far (never lower, kept in the database): the id carries the total, so each failure is told
    // once, also across restarts, and one after a re-open is new although the failed count is one seen before.
    for (const [service, failures] of Object.entries(health.failures)) {
      const byStatus = health.commands[service] ?? {};
      if (failures > 0)
        out.push({
          notification: {
            id: `submission_failed:${service}:${failures}`,
            kind: 'submission_failed',
            payload: { service, failures, failed: byStatus.failed ?? 0, byStatus },
          },
          commit: none,
        });
    }
    const episode = (key: string, holds: boolean, make: () => Notification) => {
      const told = this.active.get(key);
      if (!holds) {
        if (told === undefined) return;
        told.falseSinceMs ??= nowMs;
        if (nowMs - told.falseSinceMs >= this.limits.clearAfterSeconds * 1000) this.active.delete(key);
        return;
      }
      if (told !== undefined) return void delete told.falseSinceMs;
      const n = make();
      out.push({
        notification: { ...n, id: `${n.id}:${Math.floor(nowMs / 1000)}` },
        commit: () => this.active.set(key, {}),
      });
    };
    for (const [service, seconds] of Object.entries(health.oldestUnconfirmedSeconds))
      episode(`stuck:${service}`, seconds > this.limits.stuckSeconds, () => ({
        id: `submission_stuck:${service}`,
        kind: 'submission_stuck',
        payload: { service, oldestUnconfirmedSeconds: seconds, limitSeconds: this.limits.stuckSeconds },
      }));
    // A job nobody signs (Agent: accepted or scheduled; relay: accepted) is stuck before the unconfirmed
    // gauge could see it: the command consumer stopped, the sender standing by for a dead lock holder.
    for (const [service, byStatus] of Object.entries(health.oldestWaitingSeconds))
      for (const [status, seconds] of Object.entries(byStatus))
        episode(`waiting:${service}:${status}`, seconds > this.limits.stuckSeconds, () => ({
          id: `submission_waiting:${service}:${status}`,
          kind: 'submission_waiting',
          payload: { service, status, oldestWaitingSeconds: seconds, limitSeconds: this.limits.stuckSeconds },
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
        kind: 'consumer_lagging',
        payload: { group: g.group, lagMessages: g.lag },
      }));
    // Messages no consumer could apply, counted in the dead-letter topics themselves: every process's, kept
    // across restarts, so the id (the topic's total) is the same whoever looks and a total is told once. Every
    // level counts (`<topic>.dlq.dlq` holds the dead letters of a redrive), but not what a redrive sent back
    // up a level (deadLettersSoFar). A dead-letter topic that holds fewer messages than told was cleared
    // (deleted and created again: Kafka counts from 0 again): a new epoch, so its dead letters are told
    // although their totals were told before. A total lower than told with no level cleared is a redrive in
    // flight: nothing to tell.
    const seeded = await this.seedDeadLetters(deadLetters.map((d) => d.topic));
    for (const count of seeded ? deadLetters : []) {
      const { topic, total, levels } = count;
      const dlq = deadLetterTopic(topic);
      const told = this.deadLettered.get(topic)!;
      const clear = cleared(told, count);
      if (!clear && total <= told.total) {
        // Levels only went up: a later clear is measured from here.
        if (levels) this.deadLettered.set(topic, { ...told, levels });
        continue;
      }
      const now = { epoch: clear ? told.epoch + 1 : told.epoch, total, ...(levels && { levels }) };
      // A clear is told too (often with total 0): its row is what tells a restarted watch that the total went
      // down, so new dead letters that reach the old total again are told, in the new epoch.
      out.push({
        notification: {
          id: deadLetterNotificationId(dlq, now),
          kind: 'message_dead_lettered',
          payload: {
            topic,
            deadLetterTopic: dlq,
            total,
            ...(levels && { levels }),
            ...(now.epoch > 0 && { clearedTimes: now.epoch }),
          },
        },
        commit: () => this.deadLettered.set(topic, now),
      });
    }
    return out;
  }

  /** What was told of each topic not seen since the start; false (this look skips them) when unreadable. */
  private async seedDeadLetters(topics: readonly string[]): Promise<boolean> {
    try {
      for (const topic of topics) {
        if (this.deadLettered.has(topic)) continue;
        this.deadLettered.set(topic, (await this.lastTold(deadLetterTopic(topic))) ?? { epoch: 0, total: 0 });
      }
      return true;
    } catch (err) {
      this.onDeadLettersUnread(err as Error);
      return false;
    }
  }
}
