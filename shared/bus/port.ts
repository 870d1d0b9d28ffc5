import type { PoolClient } from '../db/pool.js';

/**
 * The event bus port. Two adapters implement it: the postgres log (embedded profile) and Kafka (production).
 * Both pass the same conformance suite (test/conformance/bus.ts): delivery at least once, per-key order,
 * commit after success, replay from the beginning / an offset / a timestamp, poison messages to the
 * dead-letter topic after bounded attempts.
 *
 * Values are opaque strings here; the typed layer in topics/ parses them with zod at the boundary.
 */

export interface TopicSpec {
  name: string;
  partitions: number;
  /** Milliseconds a message is kept; null keeps it for ever (topics that rebuild projections on replay). */
  retentionMs: number | null;
  /**
   * Its consumers rely on per-key order over the topic's whole history: its partition count stays what it was
   * created with, whatever the configuration says later (Kafka grows other topics; the postgres log never
   * changes a count).
   */
  fixedPartitions?: boolean;
}

export interface OutgoingMessage {
  /** Messages with the same key land in the same partition and are handled in publish order. */
  key: string;
  value: string;
  headers?: Record<string, string>;
}

export interface BusMessage {
  topic: string;
  partition: number;
  offset: bigint;
  key: string;
  value: string;
  headers: Record<string, string>;
  /** When the bus accepted the message (not a business time: those come from block timestamps). */
  timestamp: Date;
}

export interface HandlerContext {
  /** 1 on the first delivery attempt in this process. */
  attempt: number;
  /**
   * A failure now moves the message to the dead-letter topic (its last attempt; never for a batch tried
   * whole, which is delivered again message by message when it fails).
   */
  lastAttempt: boolean;
  /** Aborted when the subscription is stopping; long handlers should give up at a safe point. */
  signal: AbortSignal;
  /**
   * Commit this message's position inside the handler's own PostgreSQL transaction, so the effect and the
   * position are atomic. Both buses keep positions in PostgreSQL (bus_group_offsets; on Kafka the consumer
   * seeks to them on assignment, Kafka's own commit being only a hint). A compare-and-set: throws
   * PartitionFencedError (rolling the transaction back) when the group was sought or the partition taken.
   */
  commitIn(tx: PoolClient): Promise<void>;
}

export type Handler = (message: BusMessage, context: HandlerContext) => Promise<void>;

/**
 * Takes consecutive messages of one topic partition, in offset order. `commitIn(tx)` commits the position past
 * the batch's last message in the handler's transaction: the batch's effects and position are one atomic step.
 * A batch that throws is delivered again message by message (each a batch of one, with the usual retries),
 * so a poison message is dead-lettered alone and the rest of its batch still applied.
 */
export type BatchHandler = (messages: readonly BusMessage[], context: HandlerContext) => Promise<void>;

/**
 * What a bus reports of its consumers' deliveries, for metrics (both adapters call it the same way). Each call
 * is after the fact: `handled` once the messages' effects and position are committed, `deadLettered` once
 * the dead letter and the position past it are.
 */
export interface DeliveryObserver {
  /** `count` messages of `topic` handled and committed together (a batch tried whole, or one message). */
  handled(group: string, topic: string, count: number): void;
  /** A handler call failed (a batch tried whole, or one message that will be retried or dead-lettered). */
  failed(group: string, topic: string): void;
  /** A message moved to the dead-letter topic of `topic`. */
  deadLettered(group: string, topic: string): void;
  /** Kafka only: an outbox message of `topic` the broker refused for good, set aside in bus_outbox_refused. */
  outboxRefused?(topic: string): void;
}

/** Default largest batch a BatchHandler is given. */
export const DEFAULT_MAX_BATCH = 500;

/** Default SubscribeOptions.batchLingerMs: the latency a batch consumer of a steady stream trades for fuller batches. */
export const DEFAULT_BATCH_LINGER_MS = 50;

export interface SubscribeOptions {
  group: string;
  topics: readonly string[];
  /** One message at a time. Exactly one of `handler` and `batchHandler` is given. */
  handler?: Handler;
  /** Batches of one partition (see BatchHandler). */
  batchHandler?: BatchHandler;
  /** Largest batch given to `batchHandler`. Default DEFAULT_MAX_BATCH. */
  maxBatch?: number;
  /**
   * With `batchHandler`, on the postgres log: after handling less than a full read, wait this long before
   * reading again, so that a steady stream is handled in fuller batches (fewer transactions) for at most that
   * much more latency. A message that comes after a quiet spell is read at once. Default
   * DEFAULT_BATCH_LINGER_MS; 0 reads again at once.
   */
  batchLingerMs?: number;
  /** Where a group with no committed offset starts. Default: earliest. */
  startFrom?: 'earliest' | 'latest';
  /** Attempts before a failing message goes to the dead-letter topic. Default: the bus's maxAttempts. */
  maxAttempts?: number;
  /**
   * For a consumer that uses few messages of a topic and tells them by a header their producer sets (Points
   * and chain.events' `kind`): a message of `topic` whose `header` is set to a value not in `values` may be
   * delivered with an empty value, for the handler to pass over unread. Every message is still delivered in
   * order and committed as any other, and a dead-lettered one keeps its value. The postgres log does not read
   * those values (Points replaying a year of chain events uses a complaint in many); Kafka delivers them whole.
   */
  valuesOnly?: ValuesOnly;
  /**
   * Called with a message about to go to the dead-letter topic, inside the transaction that writes the dead
   * letter and commits the position past it: what a consumer records of a message it never applied commits
   * with the dead letter, or neither does (a throw rolls both back, and the message is delivered again). For
   * a consumer whose later decisions depend on every earlier message (the Classifier's chain clocks).
   * `reason`: the dead letter's error. Under `valuesOnly`, the message may come without its value.
   */
  onDeadLetter?: (message: BusMessage, reason: string, tx: PoolClient) => Promise<void>;
}

export interface ValuesOnly {
  topic: string;
  header: string;
  values: readonly string[];
}

/** Whether a message of `topic` with these headers may come without its value under `only`. */
export function valueOmitted(only: ValuesOnly | undefined, topic: string, headers: Record<string, string>) {
  if (only === undefined || only.topic !== topic) return false;
  const value = headers[only.header];
  return value !== undefined && !only.values.includes(value);
}

export interface Subscription {
  readonly group: string;
  /** Stops fetching, waits for in-flight handlers to finish, gives up partitions. */
  stop(): Promise<void>;
}

export type SeekPosition =
  | { to: 'beginning' }
  | { to: 'end' }
  | { to: 'timestamp'; at: Date }
  /** An offset from 0 to the partition's end (its next offset); any other is refused (seekOutOfRange). */
  | { to: 'offset'; partition: number; offset: bigint };

/**
 * The error of a seek to an offset the partition cannot have: below 0, or past its end (a Kafka member would
 * take such a position for a topic created again and start over from its first message).
 */
export function seekOutOfRange(
  topic: string,
  partition: number,
  offset: bigint,
  end: bigint | undefined,
): Error {
  return new Error(
    end === undefined
      ? `seek: ${topic} has no partition ${partition}`
      : `seek: offset ${offset} is outside partition ${partition} of ${topic} (0 to its end ${end})`,
  );
}

export interface PartitionLag {
  group: string;
  topic: string;
  partition: number;
  /** Messages published but not yet committed by the group. */
  lag: bigint;
  /** The offset the partition's next message will get (its log end). */
  end: bigint;
}

export interface PublishOptions {
  /**
   * Publish inside this transaction: nothing is delivered unless it commits. Postgres log: written into the
   * log in `tx`. Kafka: written to the outbox table in `tx` and sent by the outbox relay after the commit
   * (at least once; envelope ids are dedupe keys).
   */
  tx?: PoolClient;
}

export interface EventBus {
  readonly kind: 'postgres' | 'kafka';
  /** Creates the topics and their dead-letter topics if missing. */
  ensureTopics(specs: readonly TopicSpec[]): Promise<void>;
  publish(topic: string, messages: readonly OutgoingMessage[], options?: PublishOptions): Promise<void>;
  subscribe(options: SubscribeOptions): Promise<Subscription>;
  /** Moves a group's stored position; running members move there promptly (a handler in flight is fenced). */
  seek(group: string, topic: string, position: SeekPosition): Promise<void>;
  lag(group: string, topics: readonly string[]): Promise<PartitionLag[]>;
  /**
   * This process's subscriptions that stopped for good: their client will not consume again (a Kafka consumer
   * crash that kafkajs does not restart from). /health says so, since only a restart helps.
   */
  stoppedSubscriptions?(): ReadonlyArray<{ group: string; error: string }>;
  close(): Promise<void>;
}

export const deadLetterTopic = (topic: string): string => `${topic}.dlq`;
/** The topic whose dead letters `topic` holds, if it is a dead-letter topic. */
export const deadLetterSource = (topic: string): string | undefined =>
  topic.endsWith('.dlq') ? topic.slice(0, -'.dlq'.length) : undefined;

/** Headers the bus adds to a message it moves to the dead-letter topic. */
export const DLQ_HEADERS = {
  error: 'x-dlq-error',
  topic: 'x-dlq-topic',
  partition: 'x-dlq-partition',
  offset: 'x-dlq-offset',
  attempts: 'x-dlq-attempts',
  group: 'x-dlq-group',
  /** Set to `nul` when the value held U+0000, written as `\u0000` (PostgreSQL text, the outbox, cannot hold it). */
  valueEscaped: 'x-dlq-value-escaped',
  /**
   * A dead letter dead-lettered again (its redrive failed; a consumer of a dead-letter topic failed): the
   * `x-dlq-*` headers it had, a JSON array, the newest last. A redrive puts the last one back, so the message
   * can be redriven on to its first topic.
   */
  prior: 'x-dlq-prior',
} as const;

/** The subscription's handler as a batch handler, and its batch size (1 for a one-message handler). */
export function batchHandlerOf(options: SubscribeOptions): {
  handle: BatchHandler;
  maxBatch: number;
  lingerMs: number;
} {
  const { handler, batchHandler } = options;
  if ((handler === undefined) === (batchHandler === undefined))
    throw new Error(`subscribe(${options.group}): give exactly one of handler and batchHandler`);
  if (handler)
    return { handle: (messages, context) => handler(messages[0]!, context), maxBatch: 1, lingerMs: 0 };
  const maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH;
  if (!Number.isInteger(maxBatch) || maxBatch < 1)
    throw new Error(`subscribe(${options.group}): maxBatch must be a positive integer, not ${maxBatch}`);
  const lingerMs = options.batchLingerMs ?? DEFAULT_BATCH_LINGER_MS;
  if (!Number.isInteger(lingerMs) || lingerMs < 0 || lingerMs > 10_000)
    throw new Error(
      `subscribe(${options.group}): batchLingerMs must be an integer from 0 to 10000, not ${lingerMs}`,
    );
  return { handle: batchHandler!, maxBatch, lingerMs };
}
