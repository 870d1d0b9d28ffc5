import type { Counter, Gauge } from 'prom-client';
import type { Archive } from '../../shared/archive/port.js';
import type { EventBus } from '../../shared/bus/port.js';
import { withTransaction, type Pool, type PoolClient } from '../../shared/db/pool.js';
import { CodedError } from '../../shared/errors/coded-error.js';
import type { Logger } from '../../shared/logging/logger.js';
import {
  chainEventId,
  chainEvents,
  chainHeightId,
  chainHeights,
  encode,
  envelope,
  type ChainEvent,
} from '../../topics/index.js';
import type { EventBody, HeightUpdate } from './body-schema.js';
import { chunkStart, type HeightStore, type Stream } from './heights.js';
import { RejectedEvent, normalizeEvent, type ChainContracts } from './normalize.js';

export interface IngestMetrics {
  height: Gauge<'chain' | 'stream'>;
  lag: Gauge<'chain' | 'stream'>;
  events: Counter<'chain' | 'type'>;
  rejected: Counter<'reason'>;
}

export interface IngestOptions {
  pool: Pool;
  bus: EventBus;
  archive: Archive;
  heights: HeightStore;
  chains: ReadonlyMap<string, ChainContracts>;
  log: Logger;
  metrics: IngestMetrics;
  /** Timestamp of block `height` when no event of the chunk is in it (an RPC read); undefined if unknown. */
  blockTimestamp(chainId: string, height: number): Promise<number | undefined>;
  /** Blocks (from, to] are missing: ask the chain client for them. */
  requestBackfill(chainId: string, stream: Stream, from: number, to: number): void;
}

export type IngestOutcome = 'processed' | 'already processed' | 'gap: backfill requested';

/** Another Connector process moved the height between our read and our write: the chain client retries. */
export class HeightConflictError extends CodedError {
  constructor(chainId: string, stream: Stream) {
    super('HEIGHT_CONFLICT', `height of chain ${chainId} (${stream}) moved concurrently; retry`);
  }
}

/**
 * Turns chain-client callbacks into topic messages, losing nothing: every body is validated and archived
 * raw, events are published in block order with the chunk's height, and the stored height moves in the same
 * transaction (on Kafka: right after the publish), so a crash at any point repeats work (deduped downstream
 * by event id) but never skips it. Chunks that do not follow the stored height are not published; the
 * missing blocks are requested through history instead, which keeps per-chain block order.
 */
export class Ingestor {
  /** One chunk at a time per chain and stream, in arrival order. */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly options: IngestOptions) {}

  chain(chainId: string): ChainContracts | undefined {
    return this.options.chains.get(chainId);
  }

  /** Validates and normalises every event of a body first: a bad body is refused whole and changes nothing. */
  normalizeAll(chainId: string, bodies: readonly EventBody[]): ChainEvent[] {
    const chain = this.options.chains.get(chainId)!;
    try {
      return bodies
        .map((body) => normalizeEvent(body, chain))
        .sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
    } catch (err) {
      if (err instanceof RejectedEvent) this.options.metrics.rejected.inc({ reason: err.reason });
      throw err;
    }
  }

  heightUpdate(chainId: string, stream: Stream, body: HeightUpdate): Promise<IngestOutcome> {
    const events = this.normalizeAll(chainId, body.data ?? []);
    for (const e of events) {
      if (e.blockNumber > body.height || e.blockNumber < chunkStart(body.height)) {
        this.options.metrics.rejected.inc({ reason: 'outside_chunk' });
        throw new RejectedEvent(
          'undecodable',
          `event in block ${e.blockNumber} is outside the chunk of height ${body.height}`,
        );
      }
    }
    return this.serialized(chainId, stream, () =>
      this.processChunk(chainId, stream, body.height, body.data ?? [], events),
    );
  }

  /** A single event posted to a per-event callback: published unless its block is already processed. */
  singleEvent(chainId: string, stream: Stream, body: EventBody): Promise<IngestOutcome> {
    const [event] = this.normalizeAll(chainId, [body]);
    return this.serialized(chainId, stream, async () => {
      const stored = await this.options.heights.get(chainId, stream);
      if (event!.blockNumber <= stored) return 'already processed';
      await withTransaction(this.options.pool, async (tx) => {
        await this.archive([body], [event!], tx);
        await this.options.bus.publish(chainEvents.name, [this.eventMessage(event!)], { tx });
        await this.options.heights.recordLastEvent(tx, chainId, stream, chainEventId(event!));
      });
      this.options.metrics.events.inc({ chain: chainId, type: event!.kind });
      return 'processed';
    });
  }

  private async processChunk(
    chainId: string,
    stream: Stream,
    height: number,
    bodies: readonly EventBody[],
    events: readonly ChainEvent[],
  ): Promise<IngestOutcome> {
    const { heights, metrics, log } = this.options;
    const stored = await heights.get(chainId, stream);
    metrics.lag.set({ chain: chainId, stream }, Math.max(0, height - stored));
    if (height <= stored) return 'already processed';
    if (chunkStart(height) > stored + 1) {
      this.options.requestBackfill(chainId, stream, stored, height);
      return 'gap: backfill requested';
    }
    // A chunk may overlap what is stored (a history chunk ending at a non-multiple of 5): skip those blocks.
    const fresh = events.filter((e) => e.blockNumber > stored);
    const timestamp =
      fresh.find((e) => e.blockNumber === height)?.blockTimestamp ??
      (await this.options.blockTimestamp(chainId, height));

    await withTransaction(this.options.pool, async (tx) => {
      const last = fresh.at(-1);
      const advanced = await heights.advance(
        tx,
        chainId,
        stream,
        stored,
        height,
        last ? chainEventId(last) : null,
      );
      if (!advanced) throw new HeightConflictError(chainId, stream);
      await this.archive(bodies, events, tx);
      if (fresh.length > 0)
        await this.options.bus.publish(
          chainEvents.name,
          fresh.map((e) => this.eventMessage(e)),
          { tx },
        );
      if (timestamp !== undefined) {
        const payload = {
          chainId,
          stream,
          height,
          blockTimestamp: timestamp,
          lastEventId: advanced.lastEventId,
        };
        const heightEnvelope = envelope(chainHeights, payload, {
          occurredAt: timestamp,
          source: 'connector',
          id: chainHeightId(payload),
        });
        await this.options.bus.publish(chainHeights.name, [encode(chainHeights, heightEnvelope)], { tx });
      }
    });
    for (const e of fresh) metrics.events.inc({ chain: chainId, type: e.kind });
    metrics.height.set({ chain: chainId, stream }, height);
    metrics.lag.set({ chain: chainId, stream }, 0);
    if (fresh.length > 0)
      log.debug({ chain: chainId, stream, height, events: fresh.length }, 'chunk published');
    return 'processed';
  }

  private eventMessage(event: ChainEvent) {
    return encode(
      chainEvents,
      envelope(chainEvents, event, {
        occurredAt: event.blockTimestamp,
        source: 'connector',
        id: chainEventId(event),
      }),
    );
  }

  /** Raw bodies as received, keyed like the events, for audit and re-normalisation. First write wins. */
  private async archive(
    bodies: readonly EventBody[],
    events: readonly ChainEvent[],
    tx?: PoolClient,
  ): Promise<void> {
    const byKey = new Map(events.map((e) => [`${e.txHash}:${e.logIndex}`, chainEventId(e)]));
    const documents = bodies.flatMap((body) => {
      const id = byKey.get(`${body.event.transactionHash.toLowerCase()}:${Number(body.event.logIndex)}`);
      return id ? [{ id, document: body }] : [];
    });
    await this.options.archive.putMany('chain-events', documents, { tx });
  }

  private serialized<T>(chainId: string, stream: Stream, work: () => Promise<T>): Promise<T> {
    const key = `${chainId}/${stream}`;
    const previous = this.queues.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    this.queues.set(key, next);
    return next;
  }
}
