/**
 * Dead letters back to their topic, once the cause of their failure is fixed (`npm run dead-letters`).
 *
 * A redrive is a consumer of `<topic>.dlq` in the group `redrive:<topic>`: each dead letter is published to
 * its topic again in the transaction that commits the group's position past it (the postgres log writes it
 * in that transaction; Kafka's outbox sends it after the commit), so every dead letter is re-sent once,
 * across runs and crashes, and a second run sends only what was dead-lettered since. It goes to every group
 * of the topic; the groups that had handled it already skip it (every consumer applies a message once by its
 * envelope id), and the one that failed takes it, after the messages published meanwhile (its key's order is
 * not kept for it).
 */
import { consumeTarget, consumeToEnds } from './consume-to-ends.js';
import { withTransaction, type Pool } from '../db/pool.js';
import { priorStack } from './deliver.js';
import { PoisonMessageError } from './errors.js';
import {
  DLQ_HEADERS,
  deadLetterTopic,
  type BusMessage,
  type EventBus,
  type OutgoingMessage,
} from './port.js';

/** Where a redriven message came from: `<dead-letter topic>/<partition>/<offset>`. */
export const REDRIVEN_FROM_HEADER = 'x-redriven-from';

/** The group whose position in `<topic>.dlq` marks the dead letters already re-sent. */
export const redriveGroup = (topic: string): string => `redrive:${topic}`;

const BUS_HEADERS: ReadonlySet<string> = new Set(Object.values(DLQ_HEADERS));

/**
 * The message a dead letter of `topic` is published as again: its key, value and own headers, without the
 * bus's `x-dlq-*`, with where it came from. A dead letter that was one before (`x-dlq-prior`: it is going back
 * to a dead-letter topic) gets the `x-dlq-*` headers it had there back, so it can be redriven on. A dead
 * letter that does not name `topic` as its origin is not re-sent anywhere (PoisonMessageError: it moves on to
 * `<topic>.dlq.dlq`).
 */
export function redrivenMessage(topic: string, dead: BusMessage): OutgoingMessage {
  const origin = dead.headers[DLQ_HEADERS.topic];
  if (origin !== topic)
    throw new PoisonMessageError(
      `dead letter ${dead.topic}/${dead.partition}/${dead.offset} names ${origin === undefined ? 'no topic' : `topic ${origin}`} in ${DLQ_HEADERS.topic}, not ${topic}: not re-sent`,
    );
  // Its value held U+0000, kept escaped: neither bus can carry it as it was (text columns), and the escaped
  // text is another message its consumers would take as the original.
  if (dead.headers[DLQ_HEADERS.valueEscaped] !== undefined)
    throw new PoisonMessageError(
      `dead letter ${dead.topic}/${dead.partition}/${dead.offset} held U+0000 in its value (kept escaped, ${DLQ_HEADERS.valueEscaped}): it cannot be re-sent as it was`,
    );
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(dead.headers)) if (!BUS_HEADERS.has(name)) headers[name] = value;
  const stack = priorStack(dead.headers[DLQ_HEADERS.prior]);
  const restored = stack.pop();
  if (restored) {
    Object.assign(headers, restored);
    if (stack.length > 0) headers[DLQ_HEADERS.prior] = JSON.stringify(stack);
  }
  headers[REDRIVEN_FROM_HEADER] = `${dead.topic}/${dead.partition}/${dead.offset}`;
  return { key: dead.key, value: dead.value, headers };
}

/** Whether `dead` is one a redrive to `topic` never re-sends (redrivenMessage refuses it). */
function refusedToRedrive(topic: string, dead: BusMessage): boolean {
  try {
    redrivenMessage(topic, dead);
    return false;
  } catch {
    return true;
  }
}

/** Messages of `topic` the group has not committed yet, over every partition. */
const lagOf = async (bus: EventBus, group: string, topic: string): Promise<bigint> =>
  (await bus.lag(group, [topic])).reduce((n, p) => n + p.lag, 0n);

/** Dead letters of a topic: how many there are, and how many were not re-sent yet. */
export async function deadLetterCounts(
  bus: EventBus,
  topic: string,
): Promise<{ topic: string; deadLetters: bigint; notRedriven: bigint }> {
  const dlq = deadLetterTopic(topic);
  // A group that never consumes lags by every message of the topic.
  const [deadLetters, notRedriven] = await Promise.all([
    lagOf(bus, 'dead-letters:count', dlq),
    lagOf(bus, redriveGroup(topic), dlq),
  ]);
  return { topic, deadLetters, notRedriven };
}

export interface RedriveReport {
  topic: string;
  /** Dead letters published to the topic again. */
  redriven: number;
  /** Dead letters that named another topic (or none), moved on to `<topic>.dlq.dlq`. */
  refused: number;
  /**
   * Dead letters whose re-publish failed REDRIVE_ATTEMPTS times (the database away): moved on to
   * `<topic>.dlq.dlq` with their origin kept (`x-dlq-prior`); `redrive <topic>.dlq`, then `redrive <topic>`,
   * brings them home.
   */
  failed: number;
}

/** Tries of one dead letter's re-publish before it moves on to `<topic>.dlq.dlq`. */
const REDRIVE_ATTEMPTS = 5;

/**
 * Re-sends every dead letter of `topic` not re-sent before, up to the last one there when it began, then
 * stops. `onProgress(done, left)` at each look.
 */
export async function redriveDeadLetters(options: {
  bus: EventBus;
  pool: Pool;
  topic: string;
  onProgress?(done: number, left: number): void;
  /** How often the group's lag is looked at while it works. */
  pollMs?: number;
}): Promise<RedriveReport> {
  const { bus, pool, topic } = options;
  const dlq = deadLetterTopic(topic);
  const group = redriveGroup(topic);
  const report: RedriveReport = { topic, redriven: 0, refused: 0, failed: 0 };
  // The dead letters there are now: one sent home that fails again comes back after them, for the next run.
  const target = await consumeTarget(bus, group, [dlq]);
  if (target.total === 0n) return report;
  // The dead letters moved on to <topic>.dlq.dlq, by where they were (a move retried counts once). Counted where
  // the bus moves them, whatever the way: a dead letter whose attempts an earlier run spent (its database away,
  // the run ended) is moved on by this run without its handler being called, and was reported by neither.
  const movedOn = new Map<string, 'refused' | 'failed'>();
  const count = (kind: 'refused' | 'failed') => [...movedOn.values()].filter((k) => k === kind).length;
  const subscription = await bus.subscribe({
    group,
    topics: [dlq],
    maxAttempts: REDRIVE_ATTEMPTS,
    handler: async (dead, context) => {
      const message = redrivenMessage(topic, dead);
      await withTransaction(pool, async (tx) => {
        await bus.publish(topic, [message], { tx });
        await context.commitIn(tx);
      });
      report.redriven++;
    },
    onDeadLetter: async (dead) => {
      movedOn.set(`${dead.partition}/${dead.offset}`, refusedToRedrive(topic, dead) ? 'refused' : 'failed');
    },
  });
  try {
    await consumeToEnds(bus, group, [dlq], target, {
      pollMs: options.pollMs ?? 200,
      onProgress: (_done, left) => options.onProgress?.(report.redriven + movedOn.size, Number(left)),
    });
  } finally {
    await subscription.stop();
  }
  return { ...report, refused: count('refused'), failed: count('failed') };
}
