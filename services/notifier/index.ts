/**
 * n8n notifications (DESIGN §5.7; runs whenever `n8nUrl` is set): decided violations and complaint outcomes
 * from the bus, failed or stuck submissions and lagging consumers from the metrics registry, messages in
 * dead-letter topics from the bus, posted to
 * `n8nUrl` from an outbox table with retries and back-off (outbox.ts).
 */
import { type EventBus } from '../../shared/bus/port.js';
import { redriveGroup } from '../../shared/bus/redrive.js';
import type { HealthCheck } from '../../shared/runtime/http.js';
import { startHttpService } from '../../shared/runtime/http-service.js';
import { singleFlight } from '../../shared/runtime/single-flight.js';
import type { ServiceContext, ServiceDefinition, RunningService } from '../../shared/runtime/service.js';
import { allTopics } from '../../topics/index.js';
import { NOTIFIER_GROUP, NOTIFIER_TOPICS, subscribeNotifier } from './consumer.js';
import { notifierMetrics, outboxBacklog } from './metrics.js';
import { notifierMigrations } from './migrations.js';
import { enqueue, lastToldDeadLetters, OutboxSender, pruneDelivered } from './outbox.js';
import {
  DEFAULT_LIMITS,
  deadLetterLevels,
  deadLettersSoFar,
  HealthWatch,
  type DeadLetterCount,
  type WatchLimits,
} from './watch.js';

/** A consumer group name that never subscribes: its lag on a topic is the topic's whole content. */
const DEAD_LETTER_WATCH = 'notifier-dead-letter-watch';

/**
 * /health says `degraded` once the oldest undelivered notification waited this long: n8n has been down or
 * refusing for a while (retries back off to 5 minutes). Degraded, not unavailable: a restart would not help.
 */
export const OUTBOX_DEGRADED_AFTER_SECONDS = 900;

/** The `outbox` check of the notifier's /health. */
export function outboxHealth(db: ServiceContext['db']): HealthCheck {
  return async () => {
    const backlog = await outboxBacklog(db);
    if (backlog === undefined) return { status: 'unavailable', error: 'the outbox cannot be read' };
    return {
      status: backlog.oldestSeconds > OUTBOX_DEGRADED_AFTER_SECONDS ? 'degraded' : 'ok',
      pending: backlog.pending,
      oldestPendingSeconds: Math.round(backlog.oldestSeconds),
    };
  };
}

export interface NotifierOptions {
  url: string;
  watchIntervalMs?: number;
  limits?: WatchLimits;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  pollMs?: number;
  /** `notifier.port`: serve GET /health (database and outbox) and GET /metrics there. */
  port?: number;
  /** `notifier.keepDeliveredDays`: delivered rows older than this are deleted (none: kept). */
  keepDeliveredDays?: number;
  /** How often delivered rows are pruned (default hourly; first at start). */
  pruneIntervalMs?: number;
  /** `notifier.timeoutSeconds`: a post unanswered this long failed (default 30 s). */
  timeoutSeconds?: number;
}

export async function startNotifier(
  context: ServiceContext,
  options: NotifierOptions,
): Promise<RunningService> {
  const log = context.log;
  const metrics = notifierMetrics(context.metrics, context.db);
  const sender = new OutboxSender({
    pool: context.db,
    url: options.url,
    log,
    baseBackoffMs: options.baseBackoffMs,
    maxBackoffMs: options.maxBackoffMs,
    pollMs: options.pollMs,
    timeoutMs: (options.timeoutSeconds ?? 30) * 1_000,
    stopSignal: context.stopSignal,
    onOutcome: (outcome) => metrics.deliveries.inc({ outcome }),
  });
  const subscription = await subscribeNotifier({
    bus: context.bus,
    pool: context.db,
    onQueued: () => sender.wake(),
  });
  // One warning an outage of the dead-letter read, one note when it reads again.
  let deadLettersFailing = false;
  const watch = new HealthWatch(
    context.metrics,
    options.limits ?? DEFAULT_LIMITS,
    async () => {
      const totals = await deadLetterCounts(context.bus);
      if (deadLettersFailing) log.info('dead-letter topics are read again');
      deadLettersFailing = false;
      return totals;
    },
    (err) => {
      if (!deadLettersFailing)
        log.warn({ err: err.message }, 'dead-letter topics unreadable: their notifications wait');
      deadLettersFailing = true;
    },
    (dlq) => lastToldDeadLetters(context.db, dlq),
  );
  // One look at a time: a look still writing has not committed its episodes, and a second one would tell them
  // again. stop() waits for the one in flight: it writes through the pool its caller closes next.
  let looking: Promise<void> | undefined;
  const lookOnce = async () => {
    try {
      const due = await watch.look();
      try {
        // Marked as told only once written: a failed write leaves the rest for the next look.
        for (const d of due) {
          await enqueue(context.db, d.notification);
          d.commit();
        }
      } finally {
        if (due.length > 0) sender.wake();
      }
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'notifier watch failed');
    }
  };
  const timer = setInterval(() => {
    looking ??= lookOnce().finally(() => (looking = undefined));
  }, options.watchIntervalMs ?? 10_000);
  sender.start();
  // Old delivered rows deleted at start and then hourly, one pass at a time; stop() waits for the one running.
  const keepDays = options.keepDeliveredDays;
  const pruneOnce =
    keepDays === undefined
      ? undefined
      : singleFlight(async () => {
          try {
            let deleted = 0;
            for (let n = -1; n !== 0; deleted += n) n = await pruneDelivered(context.db, keepDays);
            if (deleted > 0)
              log.info({ deleted, keepDeliveredDays: keepDays }, 'old delivered notifications deleted');
          } catch (err) {
            log.warn({ err: (err as Error).message }, 'deleting old delivered notifications failed');
          }
        });
  let pruning = pruneOnce?.();
  const pruneTimer =
    pruneOnce && setInterval(() => (pruning = pruneOnce()), options.pruneIntervalMs ?? 3_600_000);
  /** Everything started above, stopped; the look and the prune pass in flight finish first. */
  const stopWork = async () => {
    clearInterval(timer);
    clearInterval(pruneTimer);
    await pruning;
    await looking;
    await subscription.stop();
    await sender.stop();
  };
  let http: RunningService | undefined;
  try {
    http =
      options.port === undefined
        ? undefined
        : await startHttpService(context, 'notifier', options.port, undefined, {
            healthChecks: { outbox: outboxHealth(context.db) },
          });
  } catch (err) {
    // A start that fails (the port taken) leaves nothing running behind it.
    await stopWork().catch((stopErr: unknown) =>
      log.warn({ err: (stopErr as Error).message }, 'stopping the notifier after a failed start failed'),
    );
    throw err;
  }
  return {
    async stop() {
      await http?.stop();
      await stopWork();
    },
  };
}

/**
 * The dead letters of each topic (deadLettersSoFar): the messages in each of its dead-letter topics, then how
 * many of each level below the first the redrive of the level above took (`redrive:<level above>`'s position).
 */
async function deadLetterCounts(bus: EventBus): Promise<DeadLetterCount[]> {
  const levelsOf = new Map(allTopics.map((t) => [t.name, deadLetterLevels(t.name)]));
  // The lag of a group that never reads is everything the topics hold (dead-letter topics keep everything).
  // Read before the redrive positions: see deadLettersSoFar.
  const totals = await messagesIn(bus, DEAD_LETTER_WATCH, [...levelsOf.values()].flat());
  const counts: DeadLetterCount[] = [];
  for (const [topic, levels] of levelsOf) {
    const held = levels.map((level) => totals.get(level) ?? 0);
    const redriven = [0];
    for (let k = 1; k < levels.length; k++) {
      if (held[k] === 0) {
        redriven.push(0); // nothing there to have taken (most levels, most of the time)
        continue;
      }
      const left = await messagesIn(bus, redriveGroup(levels[k - 1]!), [levels[k]!]);
      redriven.push(Math.max(0, held[k]! - (left.get(levels[k]!) ?? 0)));
    }
    // Only the topics that have (had) a dead-letter topic, as before levels.
    if (!totals.has(levels[0]!)) continue;
    counts.push({
      topic,
      total: deadLettersSoFar(held, redriven),
      levels: Object.fromEntries(levels.map((level, k) => [level, held[k]!])),
    });
  }
  return counts;
}

/** The lag of `group` on each of `topics`, summed over partitions (topics that do not exist are absent). */
async function messagesIn(bus: EventBus, group: string, topics: string[]): Promise<Map<string, number>> {
  const byTopic = new Map<string, number>();
  for (const p of await bus.lag(group, topics))
    byTopic.set(p.topic, (byTopic.get(p.topic) ?? 0) + Number(p.lag));
  return byTopic;
}

export const notifierService: ServiceDefinition = {
  name: 'notifier',
  sections: ['n8nUrl'],
  migrations: [notifierMigrations],
  async start(context) {
    context.trackConsumerGroup(NOTIFIER_GROUP, NOTIFIER_TOPICS);
    const { port, keepDeliveredDays, timeoutSeconds } = context.config.notifier;
    return startNotifier(context, { url: context.config.n8nUrl!, port, keepDeliveredDays, timeoutSeconds });
  },
};
