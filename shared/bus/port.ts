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

export interface SubscribeOptions {
  group: string;
  topics: readonly string[];
  handler: Handler;
  /** Where a group with no committed offset starts. Default: earliest. */
  startFrom?: 'earliest' | 'latest';
  /** Attempts before a failing message goes to the dead-letter topic. Default: the bus's maxAttempts. */
  maxAttempts?: number;
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
  | { to: 'offset'; partition: number; offset: bigint };

export interface PartitionLag {
  group: string;
  topic: string;
  partition: number;
  /** Messages published but not yet committed by the group. */
  lag: bigint;
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
  close(): Promise<void>;
}

export const deadLetterTopic = (topic: string): string => `${topic}.dlq`;

/** Headers the bus adds to a message it moves to the dead-letter topic. */
export const DLQ_HEADERS = {
  error: 'x-dlq-error',
  topic: 'x-dlq-topic',
  partition: 'x-dlq-partition',
  offset: 'x-dlq-offset',
  attempts: 'x-dlq-attempts',
  group: 'x-dlq-group',
} as const;
