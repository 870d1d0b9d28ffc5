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
  /** The adapter's way to commit inside the handler's transaction (postgres log) or a no-op (Kafka). */
  commitIn(tx: PoolClient): Promise<void>;
  /** Commits the offset after success, unless the handler already did it in its transaction. */
  commitAfter(committedByHandler: boolean): Promise<void>;
  /** Publishes `deadLetter` to the dead-letter topic and commits past the message. */
  deadLetter(message: OutgoingMessage): Promise<void>;
  group: string;
}

/**
 * One message through the handler: retries with back-off, a poison message or one that keeps failing goes to
 * the dead-letter topic after `maxAttempts`, and the offset is committed only after one of those succeeded.
 * Returns 'stopped' when the consumer stopped before the message was settled (it will be delivered again).
 */
export async function deliver(message: BusMessage, options: DeliveryOptions): Promise<'done' | 'stopped'> {
  for (let attempt = 1; ; attempt++) {
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
      await options.commitAfter(committedByHandler);
      return 'done';
    } catch (err) {
      if (err instanceof PartitionFencedError) throw err;
      const error = err instanceof Error ? err : new Error(String(err));
      if (err instanceof PoisonMessageError || attempt >= options.maxAttempts) {
        await options.deadLetter(deadLetterMessage(message, error, attempt, options.group));
        options.log.error(
          {
            topic: message.topic,
            partition: message.partition,
            offset: String(message.offset),
            attempt,
            err: error.message,
          },
          'message moved to the dead-letter topic',
        );
        return 'done';
      }
      options.log.warn(
        {
          topic: message.topic,
          partition: message.partition,
          offset: String(message.offset),
          attempt,
          err: error.message,
        },
        'handler failed; will retry',
      );
      await sleep(backoffMs(attempt), options.signal);
      if (options.signal.aborted) return 'stopped';
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
