import { randomUUID } from 'node:crypto';
import type { Counter, Gauge } from 'prom-client';
import { ZodError, z } from 'zod';
import type { Archive } from '../../shared/archive/port.js';
import { PostgresArchive } from '../../shared/archive/postgres-archive.js';
import type { EventBus, OutgoingMessage } from '../../shared/bus/port.js';
import { missingPartition, PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { publishMany, type TopicBatch } from '../../shared/bus/publish-many.js';
import { withTransaction, type Pool } from '../../shared/db/pool.js';
import { Statement } from '../../shared/db/statement.js';
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
import { buildEventBodies } from '../chain-client/event-body.js';
import { chunkEnd } from '../chain-client/delivery-plan.js';
import { eventBodySchema, type EventBody, type HeightUpdate } from './body-schema.js';
import {
  addAdvance,
  addLastEvent,
  chunkStart,
  type HeightMove,
  type HeightStore,
  type Stream,
  streamsOf,
} from './heights.js';
import { withDeadline } from '../../shared/runtime/deadline.js';
import { RejectedEvent, configuredContract, normalizeEvent, type ChainContracts } from './normalize.js';
import { RpcAnswerError, type RpcReader } from './rpc-reader.js';

export interface IngestMetrics {
  height: Gauge<'chain' | 'stream'>;
  lag: Gauge<'chain' | 'stream'>;
  events: Counter<'chain' | 'type'>;
  /** By reason, and by chain once the chain is one of the configuration's. */
  rejected: Counter<'chain' | 'reason'>;
  /** Chunks published without their height message because their block time could not be read. */
  blockTimeUnread: Counter<'chain' | 'stream'>;
  /** Single events posted after their blocks were processed without them, published late. */
  late: Counter<'chain' | 'stream'>;
  /** Logs of contracts that are not the chain's configured ones, left out of the bodies posted. */
  foreign: Counter<'chain'>;
}

export interface IngestOptions {
  pool: Pool;
  bus: EventBus;
  archive: Archive;
  heights: HeightStore;
  chains: ReadonlyMap<string, ChainContracts>;
  log: Logger;
  metrics: IngestMetrics;
  /**
   * Timestamp of block `height` when no event of the chunk is in it (an RPC read); undefined if unknown (no
   * RPC). A read that throws is taken as unknown for that chunk (see Ingestor.blockTime).
   */
  blockTimestamp(chainId: string, height: number): Promise<number | undefined>;
  /** The chain's RPC (`rpc-urls.<nativeChainId>`) for gaps the Connector reads itself. */
  rpc?(chainId: string): RpcReader | undefined;
  /** Blocks (from, to] are missing: ask the chain client for them. */
  requestBackfill(chainId: string, stream: Stream, from: number, to: number): void;
  /**
   * `connector.maxBlocksAhead`: a chunk or event further above the stored height is refused (400), and a
   * chunk's gap is requested only this far: a forged height cannot open an unbounded gap.
   */
  maxBlocksAhead: number;
  /**
   * `connector.chunkCommit`. 'async': a chunk's write commits without waiting for the WAL flush. A server
   * crash may lose the last chunks whole (height, archive and messages together, and only those no later
   * synchronous commit flushed); the stored height then lags what the chain client delivered, so its next
   * chunk opens a gap and the blocks are fetched again, as after any missed delivery. Single events, whose
   * answers nothing re-derives, always commit synchronously.
   */
  chunkCommit: 'async' | 'sync';
  /** How long a chunk waits for its block time (default BLOCK_TIME_DEADLINE_MS). */
  blockTimeDeadlineMs?: number;
  /** After a failed block time read, the next is tried this much later (default 1 s), doubling up to 60 s. */
  blockTimeRetryMs?: number;
}

/**
 * A chunk waits this long for its block time: the read is one small call, and it is awaited in the stream's
 * queue, so a hung RPC must not hold every chunk for the RPC's whole timeout.
 */
export const BLOCK_TIME_DEADLINE_MS = 2_000;
/** The longest wait between block time reads while they fail. */
const BLOCK_TIME_MAX_BACKOFF_MS = 60_000;

/** What one chunk writes, prepared before any database work. */
interface ChunkWrite {
  chainId: string;
  stream: Stream;
  /** The height read before; the write is a compare-and-set on it. */
  stored: number;
  height: number;
  /** Envelope id of the chunk's last event (null: the chunk has none). */
  lastEventId: string | null;
  events: OutgoingMessage[];
  documents: Array<{ id: string; document: EventBody }>;
  timestamp: number | undefined;
  /** Held single events were read: remove those of the chunk's blocks with it. */
  dropPending: boolean;
  /** A live chunk: written only while no live start is marked (addAdvance's `live`). */
  live: boolean;
  /** Write only if no event is held for the chunk's blocks but these (the ones read; [] when none were). */
  heldRead: readonly string[];
}

/** The height's move a chunk's write makes, on either write path. */
const heightMoveOf = (chunk: ChunkWrite): HeightMove => ({
  chainId: chunk.chainId,
  stream: chunk.stream,
  expected: chunk.stored,
  next: chunk.height,
  lastEventId: chunk.lastEventId,
  dropPending: chunk.dropPending,
  heldRead: chunk.heldRead,
  live: chunk.live,
});

/** What publishing a late single event writes. */
interface LateWrite {
  chainId: string;
  stream: Stream;
  id: string;
  body: EventBody;
  message: OutgoingMessage;
}

/** Distinct foreign contracts logged per chain (each once); the counter goes on counting past it. */
const FOREIGN_CONTRACTS_LOGGED = 20;

/** A body's block as it names it: number, time and (when it says) hash. */
interface BlockView {
  number: number;
  time: number;
  hash: string | undefined;
}
const blockView = (body: EventBody): BlockView => ({
  number: Number(body.event.blockNumber),
  time: Number(body.block.timestamp),
  hash: (body.block.hash ?? body.event.blockHash ?? undefined)?.toLowerCase(),
});
/** The same block: same number and time, and the same hash where both name one. */
const sameBlock = (a: BlockView, b: BlockView): boolean =>
  a.number === b.number &&
  a.time === b.time &&
  (a.hash === undefined || b.hash === undefined || a.hash === b.hash);
/** The envelope id (chainEventId) of a body's event. */
const bodyEventId = (chainId: string, body: EventBody): string =>
  chainEventId({ chainId, txHash: body.event.transactionHash, logIndex: Number(body.event.logIndex) });

/** The height did not move: roll the transaction back. */
class NotMoved extends Error {}

/** What a callback's 200 says happened to its body. */
export const INGEST_OUTCOMES = [
  'processed',
  'already processed',
  'gap: backfill requested',
  'held until its height update',
  'published late',
  'skipped: not a configured contract',
] as const;
export type IngestOutcome = (typeof INGEST_OUTCOMES)[number];

/** Another Connector process moved the height between our read and our write: the chain client retries. */
export class HeightConflictError extends CodedError {
  constructor(chainId: string, stream: Stream) {
    super('HEIGHT_CONFLICT', `height of chain ${chainId} (${stream}) moved concurrently; retry`);
  }
}

/**
 * Turns chain-client callbacks into topic messages, losing nothing: every body is validated and archived
 * raw, events are published in block order with the chunk's height, and the stored height moves in the same
 * atomic write (one statement on the postgres log, one transaction otherwise; on Kafka the messages leave
 * through the outbox after it), so a crash at any point repeats work (deduped downstream by event id) but
 * never skips it: a database crash that loses chunk writes committed without a flush (`chunkCommit`) loses
 * their height with them, and the chain client's next chunk opens a gap. Chunks that do not follow the
 * stored height are not published; the missing blocks are requested through history instead, which keeps
 * per-chain block order.
 */
export class Ingestor {
  /** One chunk at a time per chain and stream, in arrival order. */
  private readonly queues = new Map<string, Promise<unknown>>();
  /**
   * Per chain and stream, the height and last event id this process last read or wrote. A hint: writes made
   * from it check both, and a stale one costs a read.
   */
  private readonly known = new Map<string, { height: number; lastEventId: string | null }>();
  /**
   * This process's name in the streams' live start marks (see liveStarting), which are kept in the database:
   * another process may receive the chunk they are about.
   */
  private readonly instance = randomUUID();
  /** Per chain and stream, the highest height a chunk reported (connector_lag_blocks counts from it). */
  private readonly reported = new Map<string, number>();

  /** The highest height reported for `key`, `height` included. */
  private reportedHeight(key: string, height: number): number {
    const top = Math.max(this.reported.get(key) ?? 0, height);
    this.reported.set(key, top);
    return top;
  }

  /**
   * Chains whose block time read last failed (one warning an outage, one note when it reads again), with how
   * many failed in a row and when the next read may be tried (performance.now() ms): until then chunks go
   * on without reading, so a hung RPC costs a stream one wait per back-off, not one per chunk.
   */
  private readonly blockTimeFailing = new Map<string, { failures: number; retryAt: number }>();

  /** Per chain, the foreign contracts already logged (FOREIGN_CONTRACTS_LOGGED at most). */
  private readonly foreignLogged = new Map<string, Set<string>>();

  constructor(private readonly options: IngestOptions) {}

  chain(chainId: string): ChainContracts | undefined {
    return this.options.chains.get(chainId);
  }

  /** The system chain ids this Connector takes callbacks for. */
  chainIds(): string[] {
    return [...this.options.chains.keys()];
  }

  /** Whether the Connector follows `stream` of `chainId` (a configured chain, and a stream of streamsOf). */
  follows(chainId: string, stream: string): stream is Stream {
    const chain = this.options.chains.get(chainId);
    return chain !== undefined && (streamsOf(chain) as readonly string[]).includes(stream);
  }

  /** Validates and normalises every event of a body first: a bad body is refused whole and changes nothing. */
  normalizeAll(chainId: string, bodies: readonly EventBody[]): ChainEvent[] {
    const chain = this.options.chains.get(chainId)!;
    try {
      const events = bodies
        .map((body) => normalizeEvent(body, chain))
        .sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
      // One time per block (they are sorted by block): the Classifier's clocks are these times.
      for (let i = 1; i < events.length; i++) {
        const [a, b] = [events[i - 1]!, events[i]!];
        if (a.blockNumber === b.blockNumber && a.blockTimestamp !== b.blockTimestamp)
          throw new RejectedEvent(
            'inconsistent',
            `block ${a.blockNumber} has two times in one body (${a.blockTimestamp} and ${b.blockTimestamp})`,
          );
      }
      return events;
    } catch (err) {
      if (err instanceof RejectedEvent) this.refused(chainId, err.reason);
      throw err;
    }
  }

  /**
   * The events of a posted body, each once (the same log twice in one body is published once; two different
   * bodies for one log are refused), all of the route's stream: complaints on `reputation`, swap events on
   * `swap`, as the chain client's registrations and the RPC fill split them.
   */
  private postedEvents(
    chainId: string,
    stream: Stream,
    bodies: readonly EventBody[],
  ): { bodies: EventBody[]; events: ChainEvent[] } {
    const seen = new Map<string, EventBody>();
    const unique: EventBody[] = [];
    for (const body of this.ofConfiguredContracts(chainId, bodies)) {
      const key = `${body.event.transactionHash.toLowerCase()}:${Number(body.event.logIndex)}`;
      const first = seen.get(key);
      if (first === undefined) {
        seen.set(key, body);
        unique.push(body);
        // Serialised only on a repeat: this is the ingestion's hot path.
      } else if (JSON.stringify(first) !== JSON.stringify(body)) {
        this.refused(chainId, 'undecodable');
        throw new RejectedEvent('undecodable', `two different bodies for the log ${key} in one body`);
      }
    }
    const events = this.normalizeAll(chainId, unique);
    const wrong = events.find((e) => (e.kind === 'Complaint') !== (stream === 'reputation'));
    if (wrong) {
      this.refused(chainId, 'wrong_stream');
      throw new RejectedEvent(
        'wrong_stream',
        `a ${wrong.kind} event does not belong to the ${stream} stream (posted to …/${chainId}/${stream})`,
      );
    }
    return { bodies: unique, events };
  }

  /**
   * The bodies whose log is of one of the chain's configured contracts. The original chain client reads logs
   * without an address filter (spec/otmoic.md §4), so its chunks also carry the Otmoic-shaped logs of any other
   * contract on the chain (an older deployment, a copycat anyone can deploy): refusing the chunk for them
   * refused our own events with it, and its history too (the same log again), so anyone could stall a stream.
   * They are left out, counted (connector_foreign_events_total) and logged once per contract: a configured
   * address that is wrong shows there.
   */
  private ofConfiguredContracts(chainId: string, bodies: readonly EventBody[]): readonly EventBody[] {
    const chain = this.options.chains.get(chainId)!;
    const ours = (body: EventBody) => configuredContract(chain, body.event.address) !== undefined;
    if (bodies.every(ours)) return bodies;
    return bodies.filter((body) => {
      if (ours(body)) return true;
      const address = body.event.address.toLowerCase();
      this.options.metrics.foreign.inc({ chain: chainId });
      let logged = this.foreignLogged.get(chainId);
      if (logged === undefined) this.foreignLogged.set(chainId, (logged = new Set()));
      if (!logged.has(address) && logged.size < FOREIGN_CONTRACTS_LOGGED) {
        logged.add(address);
        this.options.log.warn(
          { chain: chainId, contract: address, swapContract: chain.swap, tx: body.event.transactionHash },
          'logs of a contract that is not configured for this chain are left out (logged once per contract)',
        );
      }
      return false;
    });
  }

  /**
   * A registration is about to be sent to a chain client. If the chain client takes it as new (it restarted
   * and forgot its registrations, or this is the first), its live delivery starts at the block after its
   * head: the first chunk it posts may cover fewer than its 5 blocks, and the blocks before it are in no
   * chunk, yet a chunk says only its height. So the next posted live chunk is not trusted to cover its
   * blocks: its range is asked for again through history (the usual gap path; duplicates change nothing).
   * Marked before the request, since a chunk may arrive before its answer, and in the database under this
   * process's name, since that chunk may reach another Connector process on the database (whose own
   * registration was answered 30209: kept in each process's memory, that one took the chunk whole and the
   * blocks before the chain client's head were skipped for good). The first live chunk, at any process,
   * consumes every mark. `liveContinues` takes this process's mark back when the chain client says the
   * registration was already there. Returns whether this process's mark was there already: an earlier
   * registration of it the chain client may have taken as new (answered "registered", or its answer lost) and
   * no live chunk since, in which case "already registered" may be about that registration and proves nothing.
   */
  liveStarting(chainId: string, stream: Stream): Promise<boolean> {
    return this.options.heights.markLiveStart(chainId, stream, this.instance);
  }

  /**
   * The chain client kept this process's registration: it starts no live delivery. Other processes' marks
   * stay (one of theirs may have been taken as new).
   */
  liveContinues(chainId: string, stream: Stream): Promise<void> {
    return this.options.heights.unmarkLiveStart(chainId, stream, this.instance);
  }

  /**
   * `history`: posted to the callback URL of a history request (its range is ours, never partial at its end);
   * `from`: that request's first block, where its first chunk may start (mid-chunk).
   */
  heightUpdate(
    chainId: string,
    stream: Stream,
    body: HeightUpdate,
    { history = false, from }: { history?: boolean; from?: number } = {},
  ): Promise<IngestOutcome> {
    const { bodies, events } = this.postedEvents(chainId, stream, body.data ?? []);
    for (const e of events) {
      if (e.blockNumber > body.height || e.blockNumber < chunkStart(body.height)) {
        this.refused(chainId, 'outside_chunk');
        throw new RejectedEvent(
          'undecodable',
          `event in block ${e.blockNumber} is outside the chunk of height ${body.height}`,
        );
      }
    }
    return this.serialized(chainId, stream, async () => {
      // A history chunk covers no block before its request's first one (the original's may: it aligns its
      // start down to a chunk boundary, and is then only asked again).
      const first = Math.max(chunkStart(body.height), from ?? 0);
      return this.processChunk(chainId, stream, body.height, bodies, events, { live: !history, first });
    });
  }

  /**
   * A single event posted to a per-event callback (history without merge). It is not published on its own:
   * it is held (stored, deduplicated by id) until its chunk is processed — by the data-less update_height
   * that follows it, a later chunk's gap fill, or the RPC — and then published with that chunk, in block order.
   * So doubled or out-of-order posts change nothing, and a crash between the event and its height loses nothing.
   */
  singleEvent(chainId: string, stream: Stream, body: EventBody): Promise<IngestOutcome> {
    const [event] = this.postedEvents(chainId, stream, [body]).events;
    if (event === undefined) return Promise.resolve('skipped: not a configured contract');
    // Encoded now, not only when its chunk comes: a held row that could not be published would fail every
    // chunk of its blocks, and the stream would never move again.
    this.publishable(event!, chainId);
    return this.serialized(chainId, stream, async () => {
      const stored = await this.options.heights.get(chainId, stream);
      if (event!.blockNumber <= stored) return this.lateEvent(chainId, stream, stored, body, event!);
      this.checkAhead(chainId, stream, stored, event!.blockNumber, 'event in block');
      // Not capped by count: a refused event would be lost when the data-less height update of its chunk
      // follows (nothing says the chunk had it). Held rows are bounded by maxBlocksAhead and deduplicated by
      // id; only a forger could grow them (connector.callbackToken closes the route). A post of the same event
      // in another version of its block (a reorg re-included it) replaces the held one and counts as the newest
      // post (joiningHeld): kept as first posted, it was dropped as held_conflict beside its block's new
      // events. A retry of the same body changes nothing. Held only while the height, read again under a lock
      // on its row, is below the block: another Connector process may have moved it past the block since the
      // read above, and a row held then was dropped with the next chunk, never published.
      const now = await this.options.heights.hold(
        chainId,
        stream,
        chainEventId(event!),
        event!.blockNumber,
        body,
      );
      if (event!.blockNumber <= now) return this.lateEvent(chainId, stream, now, body, event!);
      return 'held until its height update';
    });
  }

  /**
   * A single event of blocks the stream has already passed: a chain client posting it again, or posting it
   * for the first time after its chunk's data-less height update (history without merge, a retried post).
   * Archive and publish are one write, so an archived body means it was published: nothing more. Otherwise
   * its chunk went on without it, and answering "already processed" would lose a swap's event for good; it
   * is published now, out of block order, logged and counted, and becomes the stream's last event (the next
   * height message names it, so the Classifier takes that height only after it). The Classifier keeps a late
   * event with its swap's facts; a swap it already decided is not judged again.
   */
  private async lateEvent(
    chainId: string,
    stream: Stream,
    stored: number,
    body: EventBody,
    event: ChainEvent,
  ): Promise<IngestOutcome> {
    const id = chainEventId(event);
    const write = { chainId, stream, id, body, message: this.eventMessage(event) };
    const published = this.oneStatement()
      ? await this.writeLateOneStatement(write)
      : await this.writeLateInTransaction(write);
    if (!published) return 'already processed';
    this.known.delete(`${chainId}/${stream}`);
    this.options.metrics.late.inc({ chain: chainId, stream });
    this.options.metrics.events.inc({ chain: chainId, type: event.kind });
    this.options.log.warn(
      { chain: chainId, stream, event: id, block: event.blockNumber, stored },
      'event posted after its blocks were processed without it: published late, out of block order',
    );
    return 'published late';
  }

  private async writeLateOneStatement(late: LateWrite): Promise<boolean> {
    const statement = new Statement();
    const archive = this.options.archive as PostgresArchive;
    const archived = archive.addPutMany(statement, 'chain-events', [{ id: late.id, document: late.body }]);
    const guard = `EXISTS (SELECT 1 FROM ${archived})`;
    addLastEvent(statement, { chainId: late.chainId, stream: late.stream, lastEventId: late.id, guard });
    const batches = [{ topic: chainEvents.name, messages: [late.message] }];
    const topics = await (this.options.bus as PostgresBus).addPublish(statement, batches, {
      client: this.options.pool,
      guard,
    });
    statement.output('archived', `(SELECT count(*) FROM ${archived})`);
    try {
      return Number((await statement.run<{ archived: string }>(this.options.pool)).archived) === 1;
    } catch (err) {
      throw missingPartition(err, topics);
    }
  }

  /**
   * The archive may not share the transaction (MongoDB writes at once): a body archived before a transaction
   * that then failed would read as published, and the event would be lost for good. So the body is archived
   * only after the publish committed, which keeps "archived means published". A crash between the two
   * publishes it again at the next post (consumers drop the duplicate by its id).
   */
  private async writeLateInTransaction(late: LateWrite): Promise<boolean> {
    if ((await this.options.archive.get('chain-events', late.id)) !== undefined) return false;
    await withTransaction(this.options.pool, async (tx) => {
      await this.options.heights.setLastEvent(tx, late.chainId, late.stream, late.id);
      await publishMany(this.options.bus, [{ topic: chainEvents.name, messages: [late.message] }], { tx });
    });
    await this.options.archive.putMany('chain-events', [{ id: late.id, document: late.body }]);
    return true;
  }

  /**
   * Reads the blocks after the stored height, up to `target` and at most `rangeBlocks` of them, from the
   * chain's RPC (eth_getLogs with the stream's contract as address filter), builds the original chain-client
   * bodies from the logs and processes them chunk by chunk exactly like posted chunks: same validation and
   * normalisation, archive, events and heights in one transaction per chunk. Never reads past `target` (a
   * height a chain client reported, so at its confirmation depth) nor past the RPC's head. Returns the stored
   * height afterwards; throws (changing nothing more) when the RPC fails.
   */
  async fillFromRpc(chainId: string, stream: Stream, target: number, rangeBlocks: number): Promise<number> {
    const reader = this.options.rpc?.(chainId);
    if (!reader) throw new RpcAnswerError(`chain ${chainId} has no rpc-urls entry`);
    const stored = await this.options.heights.get(chainId, stream);
    if (stored >= target) return stored;
    const from = stored + 1;
    const to = Math.min(target, stored + rangeBlocks);
    // The reads happen outside the stream's queue, so a slow RPC never holds up posted chunks.
    const head = await reader.head();
    if (head < to) throw new RpcAnswerError(`the RPC's head ${head} is behind block ${to}`);
    const chain = this.options.chains.get(chainId)!;
    const address = stream === 'swap' ? chain.swap : chain.reputation;
    // Never without an address filter: every contract's logs. A stream without its contract is not followed.
    if (!address) throw new RpcAnswerError(`chain ${chainId} has no ${stream} contract configured`);
    const logs = await reader.logs(from, to, [address]);
    const built = await buildEventBodies(reader, logs, chain, chainId);
    // As a chain client's registrations: complaints to the reputation stream, swap events to the swap stream.
    const bodies = built
      .filter((b) => (stream === 'reputation') === (b.type === 'Reputation'))
      .map((b) => {
        const parsed = eventBodySchema.safeParse(b);
        if (!parsed.success) throw new RpcAnswerError(`an event body built from RPC answers is invalid`);
        return parsed.data;
      });
    const chunks: Array<{ first: number; height: number; bodies: EventBody[]; events: ChainEvent[] }> = [];
    for (let start = from; start <= to;) {
      const end = Math.min(chunkEnd(start), to);
      const chunk = bodies.filter((b) => {
        const n = Number(b.event.blockNumber);
        return n >= start && n <= end;
      });
      chunks.push({ first: start, height: end, bodies: chunk, events: this.normalizeAll(chainId, chunk) });
      start = end + 1;
    }
    return this.serialized(chainId, stream, async () => {
      for (const chunk of chunks) {
        // 'already processed': history or live chunks got there meanwhile (overlaps are skipped by block).
        const outcome = await this.processChunk(chainId, stream, chunk.height, chunk.bodies, chunk.events, {
          first: chunk.first,
        });
        if (outcome !== 'processed' && outcome !== 'already processed')
          throw new HeightConflictError(chainId, stream);
      }
      this.options.log.debug(
        { chain: chainId, stream, from, to, events: bodies.length },
        'blocks read from the RPC',
      );
      return to;
    });
  }

  /**
   * One chunk in a constant number of database round trips, whatever its number of events. With the
   * postgres log and archive the write is one statement (height moved, held events removed, bodies archived,
   * chain.events and chain.heights published: atomic by itself); otherwise one transaction of three
   * statements. Before it, one read of the stored height and the held events — skipped when this process
   * knows the height from its own last write: that write then also requires that no event is held for the
   * chunk's blocks (and, for a live chunk, that no live start is marked), and if anything differs it writes
   * nothing and the chunk takes the read path.
   */
  private async processChunk(
    chainId: string,
    stream: Stream,
    height: number,
    bodies: readonly EventBody[],
    events: readonly ChainEvent[],
    {
      /**
       * Posted live (not to a history URL, nor read from the RPC): while a live start is marked it may be the
       * first chunk of a delivery that restarted, and not cover the start of its blocks.
       */
      live = false,
      /**
       * The first block the chunk covers: the start of its 5 unless it is the first of a history or RPC range
       * that starts mid-chunk. Taken for all 5, such a chunk moved the height past blocks nobody sent (a
       * stored height gone back in a crash, below the range's start).
       */
      first = chunkStart(height),
    } = {},
  ): Promise<IngestOutcome> {
    const { heights, metrics } = this.options;
    const key = `${chainId}/${stream}`;
    const known = this.known.get(key);
    if (known && height > known.height && first <= known.height + 1 && this.oneStatement()) {
      const state = { height: known.height, lastEventId: known.lastEventId, pending: [], pendingIds: [] };
      if (await this.writeChunk(chainId, stream, height, bodies, events, state, live)) return 'processed';
    }
    const state = await heights.chunkState(chainId, stream, height);
    this.known.set(key, { height: state.height, lastEventId: state.lastEventId });
    // The first live chunk since a registration some process sent (and the chain client may have taken as
    // new). It consumes the marks it read on every outcome but a refusal or error, where its retry, or the next
    // chunk, is still the first of the live delivery.
    const partialStart = live && state.liveStart.length > 0;
    const consumed = async () => {
      if (partialStart) await heights.consumeLiveStart(chainId, stream, state.liveStart);
    };
    // A height refused as too far ahead (forged or buggy) is not taken as the chain's.
    const reported =
      height - state.height > this.options.maxBlocksAhead ? height : this.reportedHeight(key, height);
    metrics.lag.set({ chain: chainId, stream }, Math.max(0, reported - state.height));
    if (height <= state.height) {
      await consumed();
      return 'already processed';
    }
    if (height - state.height > this.options.maxBlocksAhead) {
      // Still asks for the blocks within reach: after a long downtime each live chunk moves the stream on.
      const reach = state.height + this.options.maxBlocksAhead;
      this.options.requestBackfill(chainId, stream, state.height, reach);
      this.checkAhead(
        chainId,
        stream,
        state.height,
        height,
        'chunk of height',
        `: blocks ${state.height + 1} to ${reach} are requested first`,
      );
    }
    if (first > state.height + 1) {
      await consumed();
      this.options.requestBackfill(chainId, stream, state.height, height);
      return 'gap: backfill requested';
    }
    if (partialStart) {
      await consumed();
      this.options.log.info(
        { chain: chainId, stream, stored: state.height, height },
        'first chunk since the chain client took our registration as new: its blocks are asked through history',
      );
      this.options.requestBackfill(chainId, stream, state.height, height);
      return 'gap: backfill requested';
    }
    // A live chunk moves nothing if a mark was set since the read (a registration sent meanwhile): its retry
    // reads the mark.
    if (!(await this.writeChunk(chainId, stream, height, bodies, events, state, live)))
      throw new HeightConflictError(chainId, stream);
    return 'processed';
  }

  /** Whether a chunk's write can be one statement: the postgres log and the postgres archive. */
  private oneStatement(): boolean {
    return this.options.bus instanceof PostgresBus && this.options.archive instanceof PostgresArchive;
  }

  /**
   * Writes a chunk that follows `state.height`. Returns false, having written nothing, when the stored
   * height or last event id is not `state`'s any more, or an event is held for its blocks that `state` did
   * not read (another Connector process held it meanwhile: the chunk is read again, and takes it in order).
   */
  private async writeChunk(
    chainId: string,
    stream: Stream,
    height: number,
    bodies: readonly EventBody[],
    events: readonly ChainEvent[],
    state: {
      height: number;
      lastEventId: string | null;
      pending: readonly unknown[];
      pendingIds: readonly string[];
    },
    /** A live chunk: written only while no live start is marked. */
    live = false,
  ): Promise<boolean> {
    const { metrics, log } = this.options;
    const stored = state.height;
    // Events posted one by one for this chunk (history without merge) join it, once each, and only where
    // they agree with the chunk on their block.
    const { held, passed } = this.heldEvents(chainId, stream, stored, state.pending);
    const extra = held.length === 0 ? [] : this.joiningHeld(chainId, stream, bodies, held);
    // Held for blocks the stream has passed: another Connector process held it while this one's chunk of its
    // block went on without it (its hold read the height before that chunk's write). Its chain client was
    // answered "held" and posts it no more: dropped, it was lost for good. Published now, late (lateEvent),
    // unless it was published (archived means published).
    const late = passed.length === 0 ? [] : await this.unpublished(chainId, stream, stored, passed);
    const all = [...bodies, ...extra.map((h) => h.body), ...late.map((h) => h.body)];
    const merged = [...events, ...extra.map((h) => h.event)].sort(
      (a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex,
    );
    // A chunk may overlap what is stored (a history chunk ending at a non-multiple of 5): skip those blocks.
    const fresh = merged.filter((e) => e.blockNumber > stored);
    const timestamp =
      fresh.find((e) => e.blockNumber === height)?.blockTimestamp ??
      (await this.blockTime(chainId, stream, height));
    // The late ones first: the chunk's height names its own last event, or the last of them.
    const published = [...late.map((h) => h.event), ...fresh];
    const last = published.at(-1);
    const chunk: ChunkWrite = {
      chainId,
      stream,
      stored,
      height,
      lastEventId: last ? chainEventId(last) : null,
      events: published.map((e) => this.eventMessage(e)),
      // Only what is published: an archived body means a published event (see lateEvent).
      documents: this.documents(all, published),
      timestamp,
      dropPending: state.pending.length > 0,
      heldRead: state.pendingIds,
      live,
    };
    const key = `${chainId}/${stream}`;
    const lastEventId = this.oneStatement()
      ? await this.writeOneStatement(chunk, state.lastEventId)
      : await this.writeInTransaction(chunk);
    if (lastEventId === false) {
      this.known.delete(key);
      return false;
    }
    this.known.set(key, { height, lastEventId });
    for (const e of published) metrics.events.inc({ chain: chainId, type: e.kind });
    for (const h of late) {
      metrics.late.inc({ chain: chainId, stream });
      log.warn(
        { chain: chainId, stream, event: chainEventId(h.event), block: h.event.blockNumber, stored },
        'event held for blocks processed without it (another Connector process): published late, out of block order',
      );
    }
    metrics.height.set({ chain: chainId, stream }, height);
    // Behind the highest height a chain client reported, not the chunk's own: a history chunk of a catch-up
    // leaves the stream as far behind as the live head says.
    metrics.lag.set({ chain: chainId, stream }, Math.max(0, this.reportedHeight(key, height) - height));
    if (fresh.length > 0)
      log.debug({ chain: chainId, stream, height, events: fresh.length }, 'chunk published');
    return true;
  }

  /**
   * Everything in one statement. The height message names the stream's last event id, which it takes from
   * the read; the compare-and-set checks that id too, so a message is never built from a stale one. Returns
   * the stream's last event id afterwards, or false when nothing was written.
   */
  private async writeOneStatement(
    chunk: ChunkWrite,
    storedLastEventId: string | null,
  ): Promise<string | null | false> {
    const bus = this.options.bus as PostgresBus;
    const archive = this.options.archive as PostgresArchive;
    const statement = new Statement();
    const moved = addAdvance(statement, { ...heightMoveOf(chunk), expectedLastEventId: storedLastEventId });
    const guard = `EXISTS (SELECT 1 FROM ${moved})`;
    if (this.options.chunkCommit === 'async') statement.commitWithoutFlush();
    if (chunk.documents.length > 0) archive.addPutMany(statement, 'chain-events', chunk.documents, guard);
    const lastEventId = chunk.lastEventId ?? storedLastEventId;
    const topics = await bus.addPublish(statement, this.batches(chunk, lastEventId), {
      client: this.options.pool,
      guard,
    });
    statement.output('moved', `(SELECT count(*) FROM ${moved})`);
    let row: { moved: string };
    try {
      row = await statement.run<{ moved: string }>(this.options.pool);
    } catch (err) {
      throw missingPartition(err, topics);
    }
    // Every part is guarded by the height's move: when it did not move, nothing was written.
    return Number(row.moved) === 1 ? lastEventId : false;
  }

  /**
   * Any bus and archive: height, archive and both topics in one transaction (on Kafka, the outbox). MongoDB
   * shares no transaction: its documents are written once the transaction committed, as a late event's are,
   * so that "archived means published" (lateEvent) holds. Written before, a transaction that then failed (a
   * database blip, a kill before COMMIT) left them archived and unpublished, and once the stream passed their
   * block without them (history without merge), a post of such an event was answered "already processed" and
   * it was lost for good. A failure between the two leaves the documents out of the archive (logged); a later
   * post of such an event publishes it again, and consumers drop the duplicate by its id.
   */
  private async writeInTransaction(chunk: ChunkWrite): Promise<string | null | false> {
    const shared = this.options.archive.kind === 'postgres';
    let written: string | null | false;
    try {
      written = await withTransaction(this.options.pool, async (tx) => {
        const advanced = await this.options.heights.advance(
          tx,
          heightMoveOf(chunk),
          this.options.chunkCommit === 'async',
        );
        if (!advanced) throw new NotMoved();
        if (shared) await this.options.archive.putMany('chain-events', chunk.documents, { tx });
        // Both topics in one statement (postgres log) or one outbox write (Kafka).
        await publishMany(this.options.bus, this.batches(chunk, advanced.lastEventId), { tx });
        return advanced.lastEventId;
      });
    } catch (err) {
      if (err instanceof NotMoved) return false;
      throw err;
    }
    if (!shared && chunk.documents.length > 0) {
      try {
        await this.options.archive.putMany('chain-events', chunk.documents);
      } catch (err) {
        // Published already: the chunk is done; only the raw copies are missing.
        this.options.log.error(
          {
            chain: chunk.chainId,
            stream: chunk.stream,
            height: chunk.height,
            events: chunk.documents.map((d) => d.id),
            err: (err as Error).message.slice(0, 300),
          },
          'chunk published, but its documents could not be archived (MongoDB)',
        );
      }
    }
    return written;
  }

  /**
   * The block time of a chunk's last block that holds none of its events, read from the chain's RPC. When the
   * read fails the chunk goes on without it: its events are published and its height stored, but no height
   * message (as without an RPC), so the Classifier's clocks wait for the next chunk whose time is known and
   * nothing is judged early. Failing the chunk instead would stop the stream, events included, for as long
   * as the RPC is down, although the chain client delivers.
   */
  private async blockTime(chainId: string, stream: Stream, height: number): Promise<number | undefined> {
    const failing = this.blockTimeFailing.get(chainId);
    if (failing && performance.now() < failing.retryAt) {
      this.options.metrics.blockTimeUnread.inc({ chain: chainId, stream });
      return undefined;
    }
    try {
      const timestamp = await withDeadline(
        this.options.blockTimestamp(chainId, height),
        this.options.blockTimeDeadlineMs ?? BLOCK_TIME_DEADLINE_MS,
        () => new RpcAnswerError(`block ${height}'s time was not read within the deadline`),
      );
      if (this.blockTimeFailing.delete(chainId))
        this.options.log.info({ chain: chainId, height }, 'block times are read again: heights published');
      return timestamp;
    } catch (err) {
      // An RPC outage or a bad answer; anything else is a bug and fails the chunk (500).
      if (!(err instanceof RpcAnswerError)) throw err;
      this.options.metrics.blockTimeUnread.inc({ chain: chainId, stream });
      const failures = (failing?.failures ?? 0) + 1;
      const first = this.options.blockTimeRetryMs ?? 1_000;
      const backoff = Math.min(BLOCK_TIME_MAX_BACKOFF_MS, first * 2 ** (failures - 1));
      this.blockTimeFailing.set(chainId, { failures, retryAt: performance.now() + backoff });
      // RpcReader's messages name the RPC by its config key, never by its URL.
      const reason = err.message;
      if (!failing) {
        this.options.log.warn(
          { chain: chainId, stream, height, reason },
          'block time unreadable: chunks are published without their height message until it reads again',
        );
      } else this.options.log.debug({ chain: chainId, stream, height, reason }, 'block time unreadable');
      return undefined;
    }
  }

  /** The chunk's events and, when its block time is known, its height (naming the stream's last event). */
  private batches(chunk: ChunkWrite, lastEventId: string | null): TopicBatch[] {
    const batches: TopicBatch[] = [{ topic: chainEvents.name, messages: chunk.events }];
    if (chunk.timestamp !== undefined) {
      const payload = {
        chainId: chunk.chainId,
        stream: chunk.stream,
        height: chunk.height,
        blockTimestamp: chunk.timestamp,
        lastEventId,
      };
      const heightEnvelope = envelope(chainHeights, payload, {
        occurredAt: chunk.timestamp,
        source: 'connector',
        id: chainHeightId(payload),
      });
      batches.push({ topic: chainHeights.name, messages: [encode(chainHeights, heightEnvelope)] });
    }
    return batches;
  }

  /**
   * Held single events of blocks after `stored`, validated, normalised and encoded again. A row that no
   * longer passes (held by an older version, or its contract since removed from the configuration) is
   * skipped with a warning and removed with the chunk: it must never hold the stream up.
   */
  private heldEvents(
    chainId: string,
    stream: Stream,
    stored: number,
    pending: readonly unknown[],
  ): {
    held: Array<{ body: EventBody; event: ChainEvent }>;
    passed: Array<{ body: EventBody; event: ChainEvent }>;
  } {
    const chain = this.options.chains.get(chainId)!;
    const held: Array<{ body: EventBody; event: ChainEvent }> = [];
    const passed: Array<{ body: EventBody; event: ChainEvent }> = [];
    for (const row of pending) {
      try {
        const body = eventBodySchema.parse(row);
        const event = normalizeEvent(body, chain);
        this.publishable(event);
        (event.blockNumber > stored ? held : passed).push({ body, event });
      } catch (err) {
        const reason = err instanceof RejectedEvent ? err.message : 'invalid held body';
        this.refused(chainId, 'held_invalid');
        this.options.log.warn(
          { chain: chainId, stream, reason },
          'held event dropped: it cannot be published',
        );
      }
    }
    return { held, passed };
  }

  /**
   * Held events of blocks the stream passed (`stored`) that were never published (not archived), in block order.
   * Only a hold racing another process's chunk leaves one (Ingestor.writeChunk).
   */
  private async unpublished(
    chainId: string,
    stream: Stream,
    stored: number,
    passed: ReadonlyArray<{ body: EventBody; event: ChainEvent }>,
  ): Promise<Array<{ body: EventBody; event: ChainEvent }>> {
    const late: Array<{ body: EventBody; event: ChainEvent }> = [];
    for (const h of passed) {
      const id = chainEventId(h.event);
      if ((await this.options.archive.get('chain-events', id)) === undefined) late.push(h);
      else
        this.options.log.debug(
          { chain: chainId, stream, event: id, stored },
          'held event was published already',
        );
    }
    return late.sort(
      (a, b) => a.event.blockNumber - b.event.blockNumber || a.event.logIndex - b.event.logIndex,
    );
  }

  /**
   * The held events that join a chunk. One the chunk has too is the chunk's. The rest get the check a posted
   * body's events get as a whole (normalizeAll: one time per block), and the block hash too: a held event
   * whose block has another hash or time than the chunk's own events give it, or than the held event of that
   * block posted last (held rows come newest first per block), was seen in a version of its block that a reorg
   * replaced between the posts. Published beside the block's other version, it was an event that never
   * happened, at a time the block no longer has; it is dropped with the chunk instead, counted
   * (reason held_conflict) and logged. The later post is taken as the later view of the chain (a chain client
   * posts a block again after reading it again; only a retry of an older post, delayed past the newer one,
   * would mislead it, and the warning names both versions).
   */
  private joiningHeld(
    chainId: string,
    stream: Stream,
    bodies: readonly EventBody[],
    held: ReadonlyArray<{ body: EventBody; event: ChainEvent }>,
  ): Array<{ body: EventBody; event: ChainEvent }> {
    const own = new Map(bodies.map((b) => [bodyEventId(chainId, b), blockView(b)]));
    const blocks = new Map([...own.values()].map((v) => [v.number, v]));
    return held.filter(({ body, event }) => {
      const view = blockView(body);
      const id = chainEventId(event);
      const ownView = own.get(id);
      const kept = ownView ?? blocks.get(view.number);
      if (kept === undefined) blocks.set(view.number, view);
      if (kept === undefined || sameBlock(view, kept)) return ownView === undefined;
      this.refused(chainId, 'held_conflict');
      this.options.log.warn(
        { chain: chainId, stream, event: id, block: view.number, held: view, kept },
        'held event dropped: the chunk gives its block another hash or time (a reorg between the posts)',
      );
      return false;
    });
  }

  /** Throws a RejectedEvent (400) when `block` is more than maxBlocksAhead above the stored height. */
  private checkAhead(
    chainId: string,
    stream: Stream,
    stored: number,
    block: number,
    what: string,
    then = '',
  ): void {
    const max = this.options.maxBlocksAhead;
    if (block - stored <= max) return;
    this.refused(chainId, 'too_far_ahead');
    // Logged by the route, as every refusal.
    throw new RejectedEvent(
      'too_far_ahead',
      `${what} ${block} is more than ${max} blocks above the stored height ${stored} of chain ${chainId} (${stream}) (connector.maxBlocksAhead)${then}`,
    );
  }

  /** Counts a refused body (connector_rejected_bodies_total) of a configured chain. */
  private refused(chainId: string, reason: string): void {
    this.options.metrics.rejected.inc({ chain: chainId, reason });
  }

  /**
   * Throws a RejectedEvent (400) unless the event encodes as a chain.events message; `countFor`: the chain whose
   * refusal this is, counted (a held row's caller counts it as held_invalid instead).
   */
  private publishable(event: ChainEvent, countFor?: string): void {
    try {
      this.eventMessage(event);
    } catch (err) {
      if (!(err instanceof ZodError)) throw err;
      if (countFor !== undefined) this.refused(countFor, 'undecodable');
      throw new RejectedEvent(
        'undecodable',
        `the event does not make a valid chain.events message: ${z.prettifyError(err).slice(0, 300)}`,
      );
    }
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
  private documents(
    bodies: readonly EventBody[],
    events: readonly ChainEvent[],
  ): Array<{ id: string; document: EventBody }> {
    const byKey = new Map(events.map((e) => [`${e.txHash}:${e.logIndex}`, chainEventId(e)]));
    return bodies.flatMap((body) => {
      const id = byKey.get(`${body.event.transactionHash.toLowerCase()}:${Number(body.event.logIndex)}`);
      return id ? [{ id, document: body }] : [];
    });
  }

  private serialized<T>(chainId: string, stream: Stream, work: () => Promise<T>): Promise<T> {
    const key = `${chainId}/${stream}`;
    const previous = this.queues.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    this.queues.set(key, next);
    return next;
  }
}
