import type { Logger } from '../logging/logger.js';
import type { PoolClient } from '../db/pool.js';
import { PartitionFencedError, PoisonMessageError } from './errors.js';
import { DLQ_HEADERS, type BusMessage, type Handler, type OutgoingMessage } from './port.js';
import { backoffMs, sleep } from './retry.js';

export interface DeliveryOptions {
  handler: Handler;
  maxAttempts: number;
  /** Aborted when the consumer stops: no further attempt starts. */
  signal: AbortSignal;
  log: Logger;
  /** Counts one more attempt of this message in PostgreSQL and returns the count (it survives restarts). */
  recordAttempt(): Promise<number>;
  /** Commits the position inside the handler's transaction (both buses: a compare-and-set in PostgreSQL). */
  commitIn(tx: PoolClient): Promise<void>;
  /** Commits the position after success, unless the handler already did it in its transaction. */
  commitAfter(committedByHandler: boolean): Promise<void>;
  /** Publishes `deadLetter` to the dead-letter topic and commits past the message, atomically. */
  deadLetter(message: OutgoingMessage): Promise<void>;
  group: string;
}

/**
 * One message through the handler: retries with back-off; a poison message, or one that failed `maxAttempts`
 * times (counted across restarts, so one that kills the process goes too), goes to the dead-letter topic, and
 * the position is committed only after one of those succeeded. A failing commit after a successful handler
 * is thrown to the adapter (which re-reads its position and delivers again); it never counts as a handler
 * failure. Returns 'stopped' when the consumer stopped before the message was settled.
 */
export async function deliver(message: BusMessage, options: DeliveryOptions): Promise<'done' | 'stopped'> {
  const where = {
    topic: message.topic,
    partition: message.partition,
    offset: String(message.offset),
  };
  for (;;) {
    if (options.signal.aborted) return 'stopped';
    const attempt = await options.recordAttempt();
    if (attempt > options.maxAttempts) {
      // Earlier attempts ended with no outcome at all: the process died or was stopped while handling.
      const error = new Error(
        `${attempt - 1} attempts ended without an outcome (the consumer stopped or crashed while handling)`,
      );
      await options.deadLetter(deadLetterMessage(message, error, attempt - 1, options.group));
      options.log.error({ ...where, attempt: attempt - 1 }, 'message moved to the dead-letter topic');
      return 'done';
    }
    let committedByHandler = false;
    try {
      await options.handler(message, {
        attempt,
        signal: options.signal,
        commitIn: async (tx) => {
          await options.commitIn(tx);
          committedByHandler = true;
        },
      });
    } catch (err) {
      if (err instanceof PartitionFencedError) throw err;
      const error = err instanceof Error ? err : new Error(String(err));
      if (err instanceof PoisonMessageError || attempt >= options.maxAttempts) {
        await options.deadLetter(deadLetterMessage(message, error, attempt, options.group));
        options.log.error(
          { ...where, attempt, err: error.message },
          'message moved to the dead-letter topic',
        );
        return 'done';
      }
      options.log.warn({ ...where, attempt, err: error.message }, 'handler failed; will retry');
      await sleep(backoffMs(attempt), options.signal);
      continue;
    }
    await commitRetrying(() => options.commitAfter(committedByHandler), options.signal);
    return 'done';
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

function deadLetterMessage(
  message: BusMessage,
  err: Error,
  attempts: number,
  group: string,
): OutgoingMessage {
  return {
    key: message.key,
    value: message.value,
    headers: {
      ...message.headers,
      [DLQ_HEADERS.error]: err.message.slice(0, 2_000),
      [DLQ_HEADERS.topic]: message.topic,
      [DLQ_HEADERS.partition]: String(message.partition),
      [DLQ_HEADERS.offset]: String(message.offset),
      [DLQ_HEADERS.attempts]: String(attempts),
      [DLQ_HEADERS.group]: group,
    },
  };
}
