import { shownHealthError, type HealthCheckResult } from '../../shared/runtime/http.js';
import type { Logger } from '../../shared/logging/logger.js';
import { errorText } from '../../shared/logging/error-text.js';
import { backoffMs, sleep } from '../../shared/bus/retry.js';
import { WakeSignal } from '../../shared/runtime/wake-signal.js';
import {
  ChainReadError,
  RpcRateLimitedError,
  WrongChainError,
  type ChainReader,
  type RawLog,
} from './chain-reader.js';
import { buildEventBodies, type ContractAddresses } from './event-body.js';
import {
  CHUNK_BLOCKS,
  chunksOf,
  planChunk,
  type PlannedDelivery,
  type Registration,
  wholeChunksEnd,
} from './delivery-plan.js';
import type { ChainClientStore, HistoryTask } from './store.js';

/** Most blocks read per eth_getLogs call (a multiple of the chunk size). */
const MAX_RANGE = 100;
/** Reads that worked in a row before a narrowed range is doubled again. */
const WIDEN_AFTER = 10;
/** Wait after a history range failed: 1 s, doubling after each failure in a row, at most 60 s. */
const HISTORY_RETRY_BASE_MS = 1_000;
const HISTORY_RETRY_MAX_MS = 60_000;
/** chainClient.historyAttempts' default: about 4 minutes of failed reads of one range. */
export const DEFAULT_HISTORY_ATTEMPTS = 10;

export interface FollowerOptions {
  reader: ChainReader;
  store: ChainClientStore;
  contracts: ContractAddresses;
  systemChainId: string;
  confirmations: number;
  startBlock: number;
  pollIntervalMs: number;
  /** Failed reads of a history task's range in a row before the task is given up (default 10). */
  historyAttempts?: number;
  log: Logger;
  /** A history task's end: all its ranges queued, or given up. */
  onHistoryOutcome?(outcome: 'queued' | 'failed'): void;
  /** Called after deliveries were queued, so the deliverer wakes. */
  onQueued(): void;
  /** The last block queued for the registrations. */
  onHeight?(height: number): void;
  /** The chain's head − confirmations, as last read. */
  onHead?(confirmed: number): void;
}

/**
 * Follows head − confirmations in whole 5-block chunks. Each step reads the logs of a range, plans the
 * deliveries of every registration, and queues them in the same transaction that advances progress, so a
 * crash repeats a step (receivers are idempotent) but never skips one.
 */
export class Follower {
  private readonly stopController = new AbortController();
  private running: Promise<void> | undefined;
  private readonly wakeSignal = new WakeSignal();

  /** When a step last read the chain (performance.now() ms), and why the last one failed since. */
  private followedAt: number | undefined;
  private startedAt = performance.now();
  private lastError: string | undefined;
  /** Why the last step found the RPC serving another chain than nativeChainId; cleared by a step that read. */
  private wrongChain: string | undefined;

  /**
   * Blocks read per eth_getLogs call now. Providers cap the range (some at a few dozen blocks or fewer), and a
   * fixed one failed for good on such a node: the follower and every history task retried the same range for
   * ever. Halved after a failed read (down to one chunk), doubled again after WIDEN_AFTER reads that worked.
   */
  private span = MAX_RANGE;
  private readsInRow = 0;
  /**
   * Each history task's own span, halved after each of its failed reads. A task's failures count as attempts
   * (historyAttempts) only once it reads one chunk at a time: before, a provider capping the range made it
   * spend them on narrowing, and the follower's reads, widening the shared span again between its back-offs,
   * could give it up on a range it could read.
   */
  private readonly historySpans = new Map<string, number>();

  constructor(private readonly options: FollowerOptions) {}

  /** The last block of the range read from `from`: a chunk end at most `span` on, never past `last`. */
  private rangeEnd(from: number, last: number, span = this.span): number {
    return Math.min(last, Math.max(from, wholeChunksEnd(from + span)));
  }

  /**
   * The logs of [from, to], or of [from, t] for a chunk end t below `to`: the blocks the node that answered
   * holds `confirmations` deep. The confirmed head was read from a node, the logs may come from another (a
   * load balancer): one lagging at `to` on a fork the chain replaced gave the events of blocks it forgets when
   * it catches up, as confirmed. A failure, or a node with no whole chunk confirmed from `from`, narrows the
   * range of the next reads.
   */
  private async logs(from: number, to: number): Promise<{ logs: RawLog[]; to: number }> {
    try {
      const read = await this.options.reader.logsAndHead(from, to);
      const confirmedThere = read.head - this.options.confirmations;
      let end = to;
      if (!(confirmedThere >= to)) {
        end = wholeChunksEnd(confirmedThere);
        if (!(end >= from))
          throw new ChainReadError(
            `the node that answered is at block ${read.head}: block ${to} has fewer than ${this.options.confirmations} confirmations there`,
          );
      }
      if (this.span < MAX_RANGE && ++this.readsInRow >= WIDEN_AFTER) {
        this.span = Math.min(MAX_RANGE, this.span * 2);
        this.readsInRow = 0;
      }
      return { logs: read.logs.filter((l) => Number(l.blockNumber) <= end), to: end };
    } catch (err) {
      this.readsInRow = 0;
      // Another chain says nothing of the range a node takes.
      if (
        this.span > CHUNK_BLOCKS &&
        !this.stopController.signal.aborted &&
        !(err instanceof WrongChainError)
      ) {
        this.span = Math.max(CHUNK_BLOCKS, Math.floor(this.span / 2));
        this.options.log.info(
          { from, to, blocks: this.span },
          'reading the logs of a range failed; reading fewer blocks at a time (a node may cap the range)',
        );
      }
      throw err;
    }
  }

  start(): void {
    this.startedAt = performance.now();
    this.running = this.loop();
  }

  /**
   * GET /health's `follower` check: `degraded` once no step read the chain for ten poll intervals (5 s at
   * least). Its height stops while the RPC fails, and every receiver then catches up to it and looks well.
   */
  health(): HealthCheckResult {
    // At once, not after ten intervals: nothing will be delivered until the RPC (or nativeChainId) is corrected.
    if (this.wrongChain !== undefined) return { status: 'degraded', error: this.wrongChain };
    const staleMs = Math.max(5_000, 10 * this.options.pollIntervalMs);
    const since = performance.now() - (this.followedAt ?? this.startedAt);
    if (since < staleMs) return { status: 'ok' };
    return {
      status: 'degraded',
      error: `the chain has not been read for ${Math.round(since / 1_000)} s: ${this.lastError ?? 'no answer yet'}`,
    };
  }

  /** Work came in (a history request): look now rather than after the poll interval. */
  wake(): void {
    this.wakeSignal.wake();
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await this.running;
  }

  /** Head − confirmations: the newest block this client reports. */
  async confirmedHead(): Promise<number> {
    return (await this.options.reader.head()) - this.options.confirmations;
  }

  private async loop(): Promise<void> {
    const { log, pollIntervalMs } = this.options;
    while (!this.stopController.signal.aborted) {
      this.wakeSignal.reset();
      try {
        const advanced = await this.step();
        this.followedAt = performance.now();
        this.lastError = undefined;
        if (this.wrongChain !== undefined) {
          this.wrongChain = undefined;
          log.info('the RPC serves the configured chain (chainClient.nativeChainId) again: following');
        }
        const replayed = await this.historyStep();
        if (!advanced && !replayed) await this.wakeSignal.sleep(pollIntervalMs, this.stopController.signal);
      } catch (err) {
        // stop() fails the reads in flight: the step was stopped, it did not fail.
        if (this.stopController.signal.aborted) break;
        if (err instanceof WrongChainError) {
          // An operator's mistake (or a balancer's node of another chain), not an outage: an error, logged when
          // it starts, not on every poll; /health says it meanwhile. Its text names both ids, never the URL.
          if (this.wrongChain !== err.message) log.error(err.message);
          this.wrongChain = this.lastError = err.message;
          await sleep(pollIntervalMs, this.stopController.signal);
          continue;
        }
        // Another failure (an outage) is what /health shows now; a wrong chain after it is logged again.
        this.wrongChain = undefined;
        // Shown by the public /health: a chain read's own text (scrubbed of the RPC URL), anything else (the
        // database driver's message names hosts, ports, users) by its code only, as the database check does.
        this.lastError = err instanceof ChainReadError ? err.message : shownHealthError(err);
        // An endpoint's Retry-After: no step before it, each would fail at once (ChainReader).
        const waitMs =
          err instanceof RpcRateLimitedError ? Math.max(pollIntervalMs, err.retryInMs) : pollIntervalMs;
        log.warn({ err: errorText(err), retryInMs: waitMs }, 'chain follower step failed; retrying');
        await sleep(waitMs, this.stopController.signal);
      }
    }
  }

  /** Processes the next range if a whole chunk is confirmed. Returns whether progress moved. */
  async step(): Promise<boolean> {
    const { store, startBlock } = this.options;
    const last = await store.progress();
    const from = last === undefined ? startBlock : last + 1;
    const confirmed = await this.confirmedHead();
    this.options.onHead?.(confirmed);
    // Only whole chunks: the highest chunk end not above the confirmed head.
    const lastWhole = wholeChunksEnd(confirmed);
    if (lastWhole < from) return false;
    const { deliveries, to } = await this.plan(
      from,
      this.rangeEnd(from, lastWhole),
      await store.registrations(),
    );
    await store.commitRange(last, to, deliveries);
    this.options.onHeight?.(to);
    if (deliveries.length > 0) this.options.onQueued();
    return true;
  }

  /**
   * Deliveries of blocks [from, to] for the given registrations (also used by history requests), or of
   * [from, t] for an earlier chunk end t (the node that answered holds no more blocks confirmed): `to` says.
   */
  async plan(
    from: number,
    to: number,
    registrations: readonly Registration[],
  ): Promise<{ deliveries: PlannedDelivery[]; to: number }> {
    const { reader, contracts, systemChainId } = this.options;
    if (registrations.length === 0) return { deliveries: [], to };
    const read = await this.logs(from, to);
    const events = await buildEventBodies(reader, read.logs, contracts, systemChainId);
    const chunks = chunksOf(from, read.to, events);
    return {
      deliveries: chunks.flatMap((chunk) => registrations.flatMap((r) => planChunk(r, chunk))),
      to: read.to,
    };
  }

  /**
   * Queues the next range of every history task (each to its own lane), moving each on in the same
   * transaction; a task that fails (RPC) is tried again later, and given up after `historyAttempts` failures in
   * a row (historyFailed). Returns whether any moved.
   */
  async historyStep(): Promise<boolean> {
    const { store, log } = this.options;
    let moved = false;
    // A task's span is forgotten when it ends (queued or given up), not when it waits out a back-off.
    for (const task of await store.historyTasks()) {
      if (this.stopController.signal.aborted) break;
      const span = Math.min(this.span, this.historySpans.get(task.id) ?? MAX_RANGE);
      try {
        const { deliveries, to } = await this.plan(task.next, this.rangeEnd(task.next, task.end, span), [
          task.registration,
        ]);
        await store.commitHistoryRange(task, to + 1, deliveries);
        if (deliveries.length > 0) this.options.onQueued();
        if (to >= task.end) {
          this.historySpans.delete(task.id);
          log.info({ task: task.id, lane: task.registration.lane, end: task.end }, 'history task queued');
          this.options.onHistoryOutcome?.('queued');
        }
        moved = true;
      } catch (err) {
        if (this.stopController.signal.aborted) break;
        // The endpoint's state, not the range's: no attempt spent, the loop waits until it serves our chain.
        if (err instanceof WrongChainError) throw err;
        if (span > CHUNK_BLOCKS && !(err instanceof RpcRateLimitedError)) {
          // Read again on the next pass, fewer blocks at a time (a node may cap the range): no attempt spent.
          this.historySpans.set(task.id, Math.max(CHUNK_BLOCKS, Math.floor(span / 2)));
          continue;
        }
        await this.historyFailed(task, err as Error);
      }
    }
    return moved;
  }

  /**
   * A failed read of a task's next range: read again after a back-off, and after `historyAttempts` failures in
   * a row the task is given up, so a range no node can read (a pruned node's "missing trie node") does not
   * hold a task slot for ever. The API has no failure message for the receiver: logged with the task's id and
   * counted (chain_client_history_tasks_total{outcome="failed"}); its posts already queued still go out.
   */
  private async historyFailed(task: HistoryTask, err: Error): Promise<void> {
    const { store, log } = this.options;
    const about = {
      task: task.id,
      lane: task.registration.lane,
      start: task.start,
      end: task.end,
      next: task.next,
      err: err.message,
    };
    // The endpoint's load or Retry-After, not the range: no attempt spent (the follower waits it out).
    if (err instanceof RpcRateLimitedError) {
      log.info(about, 'history range not read: the RPC endpoint asked to wait');
      return;
    }
    const attempts = task.failures + 1;
    if (attempts >= (this.options.historyAttempts ?? DEFAULT_HISTORY_ATTEMPTS)) {
      await store.dropHistoryTask(task);
      this.historySpans.delete(task.id);
      this.options.onHistoryOutcome?.('failed');
      log.error(
        { ...about, attempts },
        'history task given up: its range could not be read (a pruned node?); the rest of it is not delivered',
      );
      return;
    }
    const retryInMs = backoffMs(attempts, HISTORY_RETRY_BASE_MS, HISTORY_RETRY_MAX_MS);
    await store.historyRangeFailed(task, retryInMs, err.message);
    log.warn({ ...about, attempts, retryInMs }, 'history range failed; read again later');
  }
}
