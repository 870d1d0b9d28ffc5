import { nulAsText } from '../db/nul.js';
import type { Logger } from '../logging/logger.js';
import type { PoolClient } from '../db/pool.js';
import { PartitionFencedError, PoisonMessageError } from './errors.js';
import {
  DLQ_HEADERS,
  type BatchHandler,
  type BusMessage,
  type DeliveryObserver,
  type OutgoingMessage,
} from './port.js';
import { backoffMs, sleep } from './retry.js';

export interface DeliveryOptions {
  handle: BatchHandler;
  maxAttempts: number;
  /** Aborted when the consumer stops: no further attempt starts. */
  signal: AbortSignal;
  log: Logger;
  group: string;
  /** Counts one more attempt of the message at `offset` in PostgreSQL and returns it (it survives restarts). */
  recordAttempt(offset: bigint): Promise<number>;
  /** Takes back the last attempt recorded at `offset`: it ended because the consumer stops, not in a failure. */
  forgetAttempt(offset: bigint): Promise<void>;
  /** Records the one try of a batch starting at `offset`; false if any attempt there is on record already. */
  startBatchAttempt(offset: bigint): Promise<boolean>;
  /**
   * Moves the position from `from` to `next` (a compare-and-set in PostgreSQL, both buses): inside the
   * handler's transaction when `tx` is given, else on its own.
   */
  commit(from: bigint, next: bigint, tx?: PoolClient): Promise<void>;
  /**
   * Publishes `dead` (the dead letter of `message`) to the dead-letter topic and moves the position from
   * `from` to `next`, atomically, with the subscriber's SubscribeOptions.onDeadLetter in the same transaction.
   */
  deadLetter(dead: OutgoingMessage, message: BusMessage, from: bigint, next: bigint): Promise<void>;
  /** The position `next` is committed (by commit or deadLetter, whose transaction is over). */
  settled(next: bigint): void;
  /** Told of what was handled, failed and dead-lettered (metrics). */
  observer?: DeliveryObserver;
}

export interface DeliveryResult {
  outcome: 'done' | 'stopped';
  /** The position reached: past the batch when done, past what was settled when stopped. */
  next: bigint;
}

/**
 * Consecutive messages of one partition through the handler, starting at the stored position `from`.
 *
 * A batch is first tried whole: effects and position in one transaction (or the position right after).
 * If it fails, or if a batch starting at its first offset was tried before (the process died or was stopped
 * in it), it is delivered message by message, so the message at fault is retried and dead-lettered alone and
 * the others still applied; the batch try counts as an attempt of none of them. One message: retries with back-off; a poison message, or
 * one that failed `maxAttempts` times (counted across restarts, so one that kills the process goes too),
 * goes to the dead-letter topic. A failing commit after a successful handler is thrown to the adapter (which
 * re-reads its position and delivers again); it never counts as a handler failure.
 */
export async function deliverBatch(
  batch: readonly BusMessage[],
  from: bigint,
  options: DeliveryOptions,
): Promise<DeliveryResult> {
  const first = batch[0];
  if (!first) return { outcome: 'done', next: from };
  if (options.signal.aborted) return { outcome: 'stopped', next: from };
  // A batch is tried whole once per first offset; after a failure or a crash (or alone), message by message.
  if (batch.length > 1 && (await options.startBatchAttempt(first.offset))) {
    const next = batch[batch.length - 1]!.offset + 1n;
    try {
      await handleAndCommit(batch, from, next, 1, options);
      options.settled(next);
      tell(options, 'handled', first.topic, batch.length);
      return { outcome: 'done', next };
    } catch (err) {
      if (err instanceof PartitionFencedError || err instanceof CommitFailedError) throw unwrap(err);
      tell(options, 'failed', first.topic);
      options.log.warn(
        {
          topic: first.topic,
          partition: first.partition,
          from: String(first.offset),
          size: batch.length,
          err: (err as Error).message,
        },
        'batch failed; delivering its messages one by one',
      );
    }
  }
  let position = from;
  for (const message of batch) {
    const outcome = await deliverOne(message, position, options);
    if (outcome === 'stopped') return { outcome, next: position };
    position = message.offset + 1n;
    options.settled(position);
  }
  return { outcome: 'done', next: position };
}

async function deliverOne(
  message: BusMessage,
  from: bigint,
  options: DeliveryOptions,
): Promise<'done' | 'stopped'> {
  const where = { topic: message.topic, partition: message.partition, offset: String(message.offset) };
  const next = message.offset + 1n;
  for (;;) {
    if (options.signal.aborted) return 'stopped';
    const attempt = await options.recordAttempt(message.offset);
    if (attempt > options.maxAttempts) {
      // Earlier attempts ended with no outcome at all: the process died or was stopped while handling.
      const error = new Error(
        `${attempt - 1} attempts ended without an outcome (the consumer stopped or crashed while handling)`,
      );
      await options.deadLetter(
        deadLetterMessage(message, error, attempt - 1, options.group),
        message,
        from,
        next,
      );
      tell(options, 'deadLettered', message.topic);
      options.log.error({ ...where, attempt: attempt - 1 }, 'message moved to the dead-letter topic');
      return 'done';
    }
    try {
      await handleAndCommit([message], from, next, attempt, options);
      tell(options, 'handled', message.topic, 1);
      return 'done';
    } catch (err) {
      if (err instanceof PartitionFencedError || err instanceof CommitFailedError) throw unwrap(err);
      if (options.signal.aborted && !(err instanceof PoisonMessageError)) {
        // The handler gave up because the consumer stops (HandlerContext.signal): no failure, so the attempt
        // does not count, and the message is not dead-lettered on a clean stop during its last attempt.
        await options.forgetAttempt(message.offset).catch(() => undefined);
        return 'stopped';
      }
      tell(options, 'failed', message.topic);
      const error = err instanceof Error ? err : new Error(String(err));
      if (err instanceof PoisonMessageError || attempt >= options.maxAttempts) {
        await options.deadLetter(
          deadLetterMessage(message, error, attempt, options.group),
          message,
          from,
          next,
        );
        tell(options, 'deadLettered', message.topic);
        options.log.error(
          { ...where, attempt, err: error.message },
          'message moved to the dead-letter topic',
        );
        return 'done';
      }
      options.log.warn({ ...where, attempt, err: error.message }, 'handler failed; will retry');
      await sleep(backoffMs(attempt), options.signal);
    }
  }
}

/**
 * Tells the observer (metrics) what happened. Never throws: what is told is after the fact, and a failing
 * observer must not turn a committed batch into a failed one.
 */
function tell(
  options: DeliveryOptions,
  what: 'handled' | 'failed' | 'deadLettered',
  topic: string,
  count = 1,
): void {
  const observer = options.observer;
  if (!observer) return;
  try {
    if (what === 'handled') observer.handled(options.group, topic, count);
    else observer[what](options.group, topic);
  } catch (err) {
    options.log.warn({ topic, what, err: (err as Error).message }, 'delivery observer failed');
  }
}

/** A commit that failed after the handler succeeded: the adapter's business, never a handler failure. */
class CommitFailedError extends Error {
  constructor(override readonly cause: unknown) {
    super('commit failed');
  }
}

const unwrap = (err: unknown): unknown => (err instanceof CommitFailedError ? err.cause : err);

async function handleAndCommit(
  messages: readonly BusMessage[],
  from: bigint,
  next: bigint,
  attempt: number,
  options: DeliveryOptions,
): Promise<void> {
  let committedByHandler = false;
  await options.handle(messages, {
    attempt,
    lastAttempt: messages.length === 1 && attempt >= options.maxAttempts,
    signal: options.signal,
    commitIn: async (tx) => {
      await options.commit(from, next, tx);
      committedByHandler = true;
    },
  });
  if (committedByHandler) return;
  try {
    await commitRetrying(() => options.commit(from, next), options.signal);
  } catch (err) {
    throw new CommitFailedError(err);
  }
}

/**
 * The handler succeeded: its commit is retried a few times on its own (never the handler again). A fenced
 * commit is final at once; one that keeps failing is thrown to the adapter, which starts again from its
 * stored position.
 */
async function commitRetrying(commit: () => Promise<void>, signal: AbortSignal): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await commit();
    } catch (err) {
      if (err instanceof PartitionFencedError || attempt >= 5 || signal.aborted) throw err;
      await sleep(backoffMs(attempt), signal);
    }
  }
}

/**
 * A message's headers without the bus's `x-dlq-*` ones, and those (when it was a dead letter) pushed onto its
 * `x-dlq-prior` stack: dead-lettered again, it keeps where it first came from and why.
 */
function splitDeadLetterHeaders(headers: Readonly<Record<string, string>>): {
  own: Record<string, string>;
  prior?: string;
} {
  const own: Record<string, string> = {};
  const mine: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name === DLQ_HEADERS.prior) continue;
    if (DEAD_LETTER_HEADERS.has(name)) mine[name] = value;
    else own[name] = value;
  }
  if (Object.keys(mine).length === 0) return { own, prior: headers[DLQ_HEADERS.prior] };
  const stack = priorStack(headers[DLQ_HEADERS.prior]);
  return { own, prior: JSON.stringify([...stack, mine]) };
}

const DEAD_LETTER_HEADERS: ReadonlySet<string> = new Set(
  Object.values(DLQ_HEADERS).filter((name) => name !== DLQ_HEADERS.prior),
);

/** The `x-dlq-prior` stack of a dead letter ([] when it has none, or one this bus did not write). */
export function priorStack(text: string | undefined): Array<Record<string, string>> {
  if (text === undefined) return [];
  try {
    const parsed: unknown = JSON.parse(text);
    const isHeaders = (e: unknown): e is Record<string, string> =>
      !!e && typeof e === 'object' && Object.values(e).every((v) => typeof v === 'string');
    return Array.isArray(parsed) && parsed.every(isHeaders) ? parsed : [];
  } catch {
    return [];
  }
}

function deadLetterMessage(
  message: BusMessage,
  err: Error,
  attempts: number,
  group: string,
): OutgoingMessage {
  // A value with U+0000 (from a producer outside this system) could never be written to the Kafka outbox, and
  // the partition would retry it for ever: the dead letter carries it escaped, and says so.
  const escaped = message.value.includes('\u0000');
  const { own, prior } = splitDeadLetterHeaders(message.headers);
  return {
    key: message.key,
    value: escaped ? nulAsText(message.value) : message.value,
    headers: {
      ...own,
      ...(prior ? { [DLQ_HEADERS.prior]: prior } : {}),
      ...(escaped ? { [DLQ_HEADERS.valueEscaped]: 'nul' } : {}),
      [DLQ_HEADERS.error]: err.message.slice(0, 2_000),
      [DLQ_HEADERS.topic]: message.topic,
      [DLQ_HEADERS.partition]: String(message.partition),
      [DLQ_HEADERS.offset]: String(message.offset),
      [DLQ_HEADERS.attempts]: String(attempts),
      [DLQ_HEADERS.group]: group,
    },
  };
}
