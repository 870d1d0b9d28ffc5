/**
 * How far a command that consumes "everything there is" goes: to the ends its topics had when it began.
 * Waiting for a lag of 0 instead never ends on a busy deployment, where a message comes in between every two
 * looks. A replay applies what came after at its cut, exactly as far as the live consumer went
 * (replay-cut.ts); a redrive leaves later dead letters to the next run (one it sent home that failed again
 * among them).
 */
import type { EventBus, PartitionLag } from './port.js';

/** The log end of each partition, keyed `topic/partition`. */
export type Ends = ReadonlyMap<string, bigint>;

const keyOf = (p: Pick<PartitionLag, 'topic' | 'partition'>) => `${p.topic}/${p.partition}`;

export const endsOf = (lags: readonly PartitionLag[]): Ends => new Map(lags.map((p) => [keyOf(p), p.end]));

/**
 * Messages the group has still to handle before `ends`: what it has not handled, less what was published
 * after them. A partition created since then has no end in `ends`: all of it is after.
 */
export function leftBefore(ends: Ends, lags: readonly PartitionLag[]): bigint {
  let left = 0n;
  for (const p of lags) {
    const then = ends.get(keyOf(p));
    if (then === undefined) continue;
    // A log now shorter than it was (a Kafka topic deleted and created again) ends where it ends now.
    const end = then < p.end ? then : p.end;
    const before = p.lag - (p.end - end);
    if (before > 0n) left += before;
  }
  return left;
}

export interface ConsumeToEndsOptions {
  pollMs?: number;
  /** Gives up (throws) after this long; without it, waits as long as it takes. */
  timeoutMs?: number;
  /** Called at every look with the messages handled since the start and those left before the ends. */
  onProgress?(done: bigint, left: bigint): void;
}

/** Where the group stops consuming, read before its subscription starts. */
export interface ConsumeTarget {
  readonly ends: Ends;
  /** Messages the group had to handle before them. */
  readonly total: bigint;
}

export async function consumeTarget(
  bus: EventBus,
  group: string,
  topics: readonly string[],
): Promise<ConsumeTarget> {
  const lags = await bus.lag(group, topics);
  const ends = endsOf(lags);
  return { ends, total: leftBefore(ends, lags) };
}

/** Resolves once `group` handled every message before `target` (its subscription runs meanwhile). */
export async function consumeToEnds(
  bus: EventBus,
  group: string,
  topics: readonly string[],
  target: ConsumeTarget,
  options: ConsumeToEndsOptions = {},
): Promise<void> {
  const pollMs = options.pollMs ?? 200;
  const { ends, total } = target;
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
  for (let left = total; ; left = leftBefore(ends, await bus.lag(group, topics))) {
    options.onProgress?.(total - left > 0n ? total - left : 0n, left);
    if (left === 0n) return;
    if (Date.now() > deadline)
      throw new Error(
        `${group} did not reach the ends of ${topics.join(', ')} in ${options.timeoutMs} ms (${left} message(s) left)`,
      );
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
