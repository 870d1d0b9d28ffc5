import type { Consumer, EachBatchPayload, KafkaMessage } from 'kafkajs';
import { withTransaction } from '../../db/pool.js';
import type { Logger } from '../../logging/logger.js';
import { deliverBatch, type DeliveryOptions } from '../deliver.js';
import { PartitionFencedError } from '../errors.js';
import {
  batchHandlerOf,
  deadLetterTopic,
  DLQ_HEADERS,
  type BatchHandler,
  type BusMessage,
  type DeliveryObserver,
  type SubscribeOptions,
  type Subscription,
} from '../port.js';
import {
  BatchTries,
  commitPosition,
  initPosition,
  loadPosition,
  loadPositions,
  forgetAttempt,
  recordAttempt,
  type PartitionRef,
} from '../positions.js';
import { backoffMs, sleep } from '../retry.js';
import type { KafkaBus } from './kafka-bus.js';
import { writeOutbox } from './outbox.js';

export interface KafkaSubscriptionOptions extends SubscribeOptions {
  maxAttempts: number;
  log: Logger;
  positionCheckMs: number;
  metadataMaxAgeMs?: number;
  observer?: DeliveryObserver;
}

/**
 * What a kafkajs consumer crash means (its CRASH event): kafkajs restarts the consumer itself after a retriable
 * error (`restart`); after any other it stays stopped and this process consumes no more of the group.
 */
export function crashOutcome(
  crash: { error: { message: string }; restart: boolean },
  stopping: boolean,
): 'restarting' | 'stopped' | 'ignored' {
  if (stopping) return 'ignored';
  return crash.restart ? 'restarting' : 'stopped';
}

/**
 * One member of a consumer group on Kafka. Kafka assigns the partitions; where to read in each is the
 * position stored in PostgreSQL, committed with a compare-and-set (in the handler's transaction when it calls
 * commitIn). A message at another offset than the stored position is skipped (already handled) or answered by
 * a seek to it; a fenced commit (a seek, or a member that took the partition) seeks to what is stored now.
 */
export class KafkaSubscription implements Subscription {
  readonly group: string;
  /** Why kafkajs stopped this consumer for good, when it did (see crashOutcome): /health then says 503. */
  crashed: string | undefined;
  private readonly consumer: Consumer;
  private readonly stopController = new AbortController();
  /** Next offset to handle per `topic/partition`, as stored; absent: read it before the next message. */
  private readonly positions = new Map<string, bigint>();
  /** Bumped at each local change of a position, so a background check never undoes a commit it raced. */
  private readonly versions = new Map<string, number>();
  private readonly inFlight = new Set<string>();
  /** Per `topic/partition`: the batch try this process's last commit recorded (see BatchTries). */
  private readonly tries = new Map<string, BatchTries>();
  /** Per `topic/partition`: fenced batches in a row, for the pause before the next try. */
  private readonly fenced = new Map<string, number>();
  private checker: NodeJS.Timeout | undefined;
  private checking: Promise<void> = Promise.resolve();
  private stopped: Promise<void> | undefined;
  private readonly handle: BatchHandler;
  private readonly maxBatch: number;

  constructor(
    private readonly bus: KafkaBus,
    private readonly options: KafkaSubscriptionOptions,
  ) {
    this.group = options.group;
    ({ handle: this.handle, maxBatch: this.maxBatch } = batchHandlerOf(options));
    this.consumer = bus.kafka.consumer({
      // On the broker, under the bus's prefix: deployments sharing a cluster never join each other's groups.
      groupId: bus.names.groupId(options.group),
      // A subscribed topic deleted by an operator stays deleted: kafkajs's metadata requests would otherwise
      // have a broker that allows it create it again with its defaults (KafkaBus.createProducer).
      allowAutoTopicCreation: false,
      // A member stopped or killed gives its partitions up quickly.
      sessionTimeout: 10_000,
      heartbeatInterval: 1_000,
      rebalanceTimeout: 20_000,
      retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 5_000 },
      // stop() waits for the fetch in progress: keep an idle fetch short.
      maxWaitTimeInMs: 1_000,
      ...(options.metadataMaxAgeMs !== undefined && { metadataMaxAge: options.metadataMaxAgeMs }),
    });
  }

  private get stopping(): boolean {
    return this.stopController.signal.aborted;
  }

  /** Resolves once the consumer joined its group (partitions assigned), or fails after 60 s. */
  async start(): Promise<void> {
    const { consumer, options } = this;
    let removeListener: (() => void) | undefined;
    const joined = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`group ${options.group} did not join within 60 s`)),
        60_000,
      );
      removeListener = consumer.on(consumer.events.GROUP_JOIN, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    // A new assignment: every assigned partition is sought to its stored position.
    consumer.on(consumer.events.GROUP_JOIN, (event) => {
      for (const key of this.positions.keys()) this.bump(key);
      this.positions.clear();
      this.tries.clear();
      this.fenced.clear();
      // Kafka's topic names: logical ones from here on.
      const assignment = Object.entries(event.payload.memberAssignment).flatMap(([name, partitions]) => {
        const topic = this.bus.names.fromKafka(name);
        return topic === undefined ? [] : [[topic, partitions] as const];
      });
      this.checking = this.checking.then(() => this.seekAssigned(assignment));
    });
    consumer.on(consumer.events.CRASH, (event) => {
      const { error, restart } = event.payload;
      const outcome = crashOutcome({ error, restart }, this.stopping);
      if (outcome === 'restarting')
        options.log.warn({ err: error.message }, 'kafka consumer crashed; kafkajs restarts it');
      if (outcome !== 'stopped') return;
      this.crashed = error.message;
      options.log.error(
        { err: error.message },
        'kafka consumer crashed and will not restart: this group consumes nothing more until the service restarts',
      );
    });
    await consumer.connect();
    await consumer.subscribe({
      topics: options.topics.map((t) => this.bus.names.toKafka(t)),
      fromBeginning: true,
    });
    await consumer.run({
      // Kafka's committed offset is only a hint where to fetch from; the position is in PostgreSQL.
      autoCommit: true,
      autoCommitInterval: 5_000,
      // Partitions in parallel, each one batch at a time, in offset order: per-key order holds.
      partitionsConsumedConcurrently: 4,
      // Offsets are resolved as they are settled: a batch left half-way is fetched again from there.
      eachBatchAutoResolve: false,
      eachBatch: (payload) => this.onBatch(payload),
    });
    try {
      await joined;
    } finally {
      removeListener?.();
    }
    this.checker = setInterval(() => {
      this.checking = this.checking.then(() => this.checkPositions());
    }, options.positionCheckMs);
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      clearInterval(this.checker);
      this.stopController.abort();
      await this.checking;
      // Waits for the handler in flight, then leaves the group.
      await this.consumer.disconnect();
      // Recorded batch tries that never started are taken back, so whoever goes on batches at once.
      await Promise.all(
        [...this.tries].map(([partition, tries]) =>
          tries.disarm().catch((err) => {
            this.options.log.warn({ err: (err as Error).message, partition }, 'could not disarm batch try');
          }),
        ),
      );
      this.bus.forget(this);
    })();
    return this.stopped;
  }

  private bump(key: string): void {
    this.versions.set(key, (this.versions.get(key) ?? 0) + 1);
  }

  private setPosition(key: string, next: bigint | undefined): void {
    this.bump(key);
    if (next === undefined) this.positions.delete(key);
    else this.positions.set(key, next);
  }

  private seekTo(topic: string, partition: number, offset: bigint): void {
    if (!this.stopping)
      this.consumer.seek({ topic: this.bus.names.toKafka(topic), partition, offset: offset.toString() });
  }

  /** Delivery of one partition's messages: positions, attempts and dead letters in PostgreSQL. */
  private delivery(ref: PartitionRef): DeliveryOptions {
    const pool = this.bus.pool;
    const key = `${ref.topic}/${ref.partition}`;
    let tries = this.tries.get(key);
    if (!tries) this.tries.set(key, (tries = new BatchTries(pool, ref)));
    return {
      handle: this.handle,
      maxAttempts: this.options.maxAttempts,
      group: this.group,
      log: this.options.log,
      signal: this.stopController.signal,
      recordAttempt: (offset) => recordAttempt(pool, ref, offset),
      forgetAttempt: (offset) => forgetAttempt(pool, ref, offset),
      startBatchAttempt: (offset) => tries.start(offset),
      commit: (from, next, tx) => commitPosition(tx ?? pool, ref, from, next, true),
      // The dead letter (through the outbox) and the commit past it are one transaction.
      deadLetter: (dead, message, from, next) =>
        withTransaction(pool, async (tx) => {
          await writeOutbox(tx, deadLetterTopic(ref.topic), [dead]);
          await commitPosition(tx, ref, from, next, true);
          await this.options.onDeadLetter?.(message, dead.headers?.[DLQ_HEADERS.error] ?? '', tx);
        }),
      settled: (next) => tries.committed(next),
      observer: this.options.observer,
    };
  }

  /**
   * Offsets `from`…`to - 1` hold no message of this partition's log that a consumer could see: a fetch from
   * `from` or earlier came back with `to` next (transaction markers, aborted or compacted records, which
   * kafkajs leaves out). The position moves over them; seeking `from` again would fetch the same batch for
   * ever.
   */
  private async skipGap(ref: PartitionRef, key: string, from: bigint, to: bigint): Promise<void> {
    this.options.log.info(
      { topic: ref.topic, partition: ref.partition, from: String(from), to: String(to) },
      'offsets without a visible message (transaction markers, aborted or compacted records) passed over',
    );
    await commitPosition(this.bus.pool, ref, from, to);
    this.setPosition(key, to);
  }

  /**
   * The stored position is past the end of the partition's log: the topic was deleted and created again, the
   * cluster is another one, or an unclean leader election truncated the log. Messages there now are not the
   * ones handled before, and skipping them would lose them without a word; so the group reads the partition
   * again from its start (what it handled before is dropped again by its id) and says so.
   */
  private async positionBeyondEnd(ref: PartitionRef, key: string, stored: bigint): Promise<void> {
    const low = await this.bus.lowWatermark(ref.topic, ref.partition);
    this.options.log.error(
      { topic: ref.topic, partition: ref.partition, stored: String(stored), from: String(low) },
      "the group's position is past the end of the log (topic created again, another cluster, or a truncated log): reading the partition again from its start",
    );
    await commitPosition(this.bus.pool, ref, stored, low);
    this.setPosition(key, low);
    this.seekTo(ref.topic, ref.partition, low);
  }

  /**
   * A fetched batch of one partition: what is before the stored position was handled already; from the
   * stored position on, consecutive messages go through the handler in batches of at most maxBatch.
   */
  private async onBatch({
    batch,
    resolveOffset,
    heartbeat,
    isRunning,
    isStale,
  }: EachBatchPayload): Promise<void> {
    // Stale: a seek (or a rebalance) moved the partition since the batch was fetched, while it waited for a
    // worker; its high watermark may then be below the new position, which read as "past the end of the log"
    // and moved the group back to the log's start. The fetch from the new position brings what comes next.
    if (this.stopping || isStale()) return;
    const { partition } = batch;
    // Logical from here on (the batch names the Kafka topic, under the bus's prefix).
    const topic = this.bus.names.logical(batch.topic);
    const key = `${topic}/${partition}`;
    const ref: PartitionRef = { group: this.group, topic, partition };
    this.inFlight.add(key);
    let offset: bigint | undefined;
    try {
      let expected = this.positions.get(key);
      if (expected === undefined) {
        expected = await this.ensurePosition(ref);
        this.setPosition(key, expected);
      }
      const fresh = batch.messages.filter((m) => BigInt(m.offset) >= expected!);
      const last = batch.messages[batch.messages.length - 1];
      if (fresh.length === 0) {
        // A fetch answer's watermark alone is no proof: a leader elected a moment ago answers with its own,
        // which can lag the previous leader's, and a fetch from Kafka's committed offset (a hint, behind) after a
        // rebalance then holds only handled messages below the position. Taken for the end of the log, it moved
        // the group back to the partition's start. The broker's offset list says where the log ends.
        if (BigInt(batch.highWatermark) < expected) {
          const high = await this.bus.highWatermark(topic, partition);
          if (high !== undefined && high < expected) return await this.positionBeyondEnd(ref, key, expected);
        }
        // Handled before: Kafka's hint was behind.
        if (last) resolveOffset(last.offset);
        return;
      }
      offset = BigInt(fresh[0]!.offset);
      if (offset > expected) {
        const low = await this.bus.lowWatermark(topic, partition);
        if (low > expected) {
          // Retention deleted messages this group never handled: nothing to wait for, go on from the log's start.
          this.options.log.warn(
            { topic, partition, from: String(expected), to: String(low) },
            'messages expired before this group handled them',
          );
          await commitPosition(this.bus.pool, ref, expected, low);
          expected = low;
          this.setPosition(key, low);
        }
        if (offset !== expected) {
          if (!fetchedFrom(batch, expected)) return this.seekTo(topic, partition, expected);
          await this.skipGap(ref, key, expected, offset);
          expected = offset;
        }
      }
      const delivery = this.delivery(ref);
      for (let at = 0; at < fresh.length;) {
        if (this.stopping || !isRunning() || isStale()) return;
        // Consecutive offsets from the stored position only (a gap is sought, as a message out of place).
        const chunk: KafkaMessage[] = [];
        while (
          at < fresh.length &&
          chunk.length < this.maxBatch &&
          BigInt(fresh[at]!.offset) === expected + BigInt(chunk.length)
        )
          chunk.push(fresh[at++]!);
        if (chunk.length === 0) {
          if (!fetchedFrom(batch, expected)) return this.seekTo(topic, partition, expected);
          const next = BigInt(fresh[at]!.offset);
          await this.skipGap(ref, key, expected, next);
          expected = next;
          continue;
        }
        offset = BigInt(chunk[0]!.offset);
        const { outcome, next } = await deliverBatch(
          chunk.map((m) => toBusMessage(topic, partition, m)),
          expected,
          delivery,
        );
        if (next > expected) {
          this.fenced.delete(key);
          expected = next;
          this.setPosition(key, next);
          resolveOffset(String(next - 1n));
        }
        if (outcome === 'stopped') return;
        await heartbeat();
      }
    } catch (err) {
      this.setPosition(key, undefined);
      if (!(err instanceof PartitionFencedError)) {
        this.options.log.warn(
          { topic, partition, offset: String(offset), err: (err as Error).message },
          'batch not settled (database or broker error); retrying from the stored position',
        );
        await sleep(500, this.stopController.signal);
      } else {
        // A seek or a takeover fences once: go on at once. Fenced again and again without progress is
        // something else (the position row gone?): never spin on it.
        const times = (this.fenced.get(key) ?? 0) + 1;
        this.fenced.set(key, times);
        if (times > 1) {
          if (times === 5)
            this.options.log.warn({ topic, partition }, 'batches fenced again and again; backing off');
          await sleep(backoffMs(times - 1, 50, 5_000), this.stopController.signal);
        }
      }
      // Fenced (seeked, or taken over) or failed: go on from what is stored now.
      const stored = await loadPosition(this.bus.pool, ref).catch(() => undefined);
      if (stored !== undefined) this.setPosition(key, stored);
      const at = stored ?? offset;
      if (at !== undefined) this.seekTo(topic, partition, at);
    } finally {
      this.inFlight.delete(key);
    }
  }

  /** `assignment`: logical topics and their partitions. */
  private async seekAssigned(assignment: ReadonlyArray<readonly [string, number[]]>): Promise<void> {
    if (this.stopping) return;
    try {
      const stored = await loadPositions(this.bus.pool, this.group, this.options.topics);
      for (const [topic, partitions] of assignment) {
        for (const partition of partitions) {
          const key = `${topic}/${partition}`;
          if (this.inFlight.has(key) || this.positions.has(key)) continue;
          const at = stored.get(key) ?? (await this.ensurePosition({ group: this.group, topic, partition }));
          if (this.inFlight.has(key) || this.positions.has(key)) continue;
          this.setPosition(key, at);
          this.seekTo(topic, partition, at);
        }
      }
    } catch (err) {
      // Each partition's first message reads its position anyway.
      this.options.log.warn({ err: (err as Error).message }, 'could not seek the assigned partitions');
    }
  }

  /**
   * The stored position, created for a partition that has none: one added to the topic after the group
   * subscribed (subscribe() creates the rows of the partitions there were). Such a partition is read from its
   * start: everything in it came after the group began. Race-safe: the first row written wins.
   */
  private async ensurePosition(ref: PartitionRef): Promise<bigint> {
    const stored = await loadPosition(this.bus.pool, ref);
    if (stored !== undefined) return stored;
    const low = await this.bus.lowWatermark(ref.topic, ref.partition);
    await initPosition(this.bus.pool, ref, low);
    this.options.log.info(
      { topic: ref.topic, partition: ref.partition, from: String(low) },
      'new partition: position created',
    );
    return (await loadPosition(this.bus.pool, ref)) ?? low;
  }

  /** A seek by anyone moved a stored position: an idle member moves there too (a busy one is fenced). */
  private async checkPositions(): Promise<void> {
    if (this.stopping || this.positions.size === 0) return;
    const versions = new Map(this.versions);
    try {
      const stored = await loadPositions(this.bus.pool, this.group, this.options.topics);
      for (const [key, mine] of this.positions) {
        const theirs = stored.get(key);
        if (theirs === undefined || theirs === mine) continue;
        if (this.inFlight.has(key) || this.versions.get(key) !== versions.get(key)) continue;
        const [topic, partition] = splitKey(key);
        this.setPosition(key, theirs);
        this.seekTo(topic, partition, theirs);
      }
    } catch (err) {
      this.options.log.warn({ err: (err as Error).message }, 'position check failed');
    }
  }
}

function splitKey(key: string): [string, number] {
  const at = key.lastIndexOf('/');
  return [key.slice(0, at), Number(key.slice(at + 1))];
}

function toBusMessage(topic: string, partition: number, message: KafkaMessage): BusMessage {
  return {
    topic,
    partition,
    offset: BigInt(message.offset),
    key: message.key?.toString() ?? '',
    value: message.value?.toString() ?? '',
    headers: Object.fromEntries(
      Object.entries(message.headers ?? {}).map(([k, v]) => [
        k,
        Array.isArray(v) ? String(v[0]) : String(v ?? ''),
      ]),
    ),
    timestamp: new Date(Number(message.timestamp)),
  };
}

/**
 * Whether kafkajs fetched this batch from `offset` or earlier (its `fetchedOffset`, not in its types): then
 * every offset from there up to a returned message that is missing has no visible message.
 */
function fetchedFrom(batch: EachBatchPayload['batch'], offset: bigint): boolean {
  const fetched = (batch as unknown as { fetchedOffset?: string }).fetchedOffset;
  return fetched !== undefined && BigInt(fetched) <= offset;
}
