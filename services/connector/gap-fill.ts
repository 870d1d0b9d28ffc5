import type { Gauge } from 'prom-client';
import { backoffMs, sleep } from '../../shared/bus/retry.js';
import type { Logger } from '../../shared/logging/logger.js';
import type { HealthCheckResult } from '../../shared/runtime/http.js';
import type { Stream } from './heights.js';
import { RpcReaderStoppedError } from './rpc-reader.js';

export interface GapFillMetrics {
  /** Seconds the stream has been stuck (0 when it is not). */
  stuck: Gauge<'chain' | 'stream'>;
  /** First and last block of the open gap (0 when there is none). */
  gapFrom: Gauge<'chain' | 'stream'>;
  gapTo: Gauge<'chain' | 'stream'>;
}

export interface GapFillOptions {
  log: Logger;
  metrics: GapFillMetrics;
  /** A history request that made no progress for this long is sent again. */
  retryMs: number;
  /** A gap whose history made no progress for this long (or whose request failed) is read from the RPC. */
  historyTimeoutMs: number;
  /** How often a stuck stream is logged again. */
  reportIntervalMs: number;
  /** How often an open gap looks at the stored height (default 200 ms). */
  tickMs?: number;
  storedHeight(chainId: string, stream: Stream): Promise<number>;
  /**
   * Asks the chain client for blocks start…end; rejects when it refuses or does not answer. `stop` is aborted
   * when the filler stops (a request in flight then ends, and its failure is not reported).
   */
  requestHistory(
    chainId: string,
    stream: Stream,
    start: number,
    end: number,
    stop: AbortSignal,
  ): Promise<void>;
  /** Reads the next bounded range up to `target` from the RPC and publishes it; rejects when the RPC fails. */
  fillFromRpc(chainId: string, stream: Stream, target: number): Promise<number>;
}

interface Gap {
  chainId: string;
  stream: Stream;
  /** Last processed block as last seen, and the highest height a chain client reported past it. */
  stored: number;
  target: number;
  openedAt: number;
  lastProgressAt: number;
  requestedAt: number;
  /** Who fills it: the chain client's history, or (after the timeout, to the end of the gap) the RPC. */
  source: 'history' | 'rpc';
  historyError?: string;
  rpcError?: string;
  rpcFailures: number;
  stuck: boolean;
  reportedAt: number;
}

/**
 * Fills the gaps of every stream so that none stops for good. A gap (a chunk arrived that does not follow the
 * stored height) is first asked of the chain client as history. When that history makes no progress within
 * `historyTimeoutMs`, or the chain client refuses the request, the Connector reads the missing blocks itself
 * from the RPC, up to the highest height reported meanwhile (the live chunks that waited), then live chunks
 * follow on again. History arriving afterwards is a duplicate of processed blocks and changes nothing.
 *
 * A stream is *stuck* when its gap made no progress for twice `historyTimeoutMs` (the history's time, then as
 * long again for the RPC): shown in `connector_stream_stuck_seconds`, in `/health` (degraded) and logged when
 * it becomes stuck, every `reportIntervalMs` while it stays stuck, and when it moves again.
 */
export class GapFiller {
  private readonly gaps = new Map<string, Gap>();
  private readonly running = new Set<Promise<void>>();
  private readonly stopController = new AbortController();
  /** Looks at every open gap each tick for the stuck signals, whatever its fill is waiting on. */
  private readonly watch: NodeJS.Timeout;

  constructor(private readonly options: GapFillOptions) {
    this.watch = setInterval(() => {
      const now = Date.now();
      for (const gap of this.gaps.values()) this.signal(gap, now);
    }, options.tickMs ?? 200);
    this.watch.unref();
  }

  /** Blocks after `stored` up to `height` are missing (called for every chunk that does not follow). */
  report(chainId: string, stream: Stream, stored: number, height: number): void {
    if (this.stopController.signal.aborted) return;
    const key = `${chainId}/${stream}`;
    const gap = this.gaps.get(key);
    if (gap) {
      gap.target = Math.max(gap.target, height);
      return;
    }
    const now = Date.now();
    const opened: Gap = {
      chainId,
      stream,
      stored,
      target: height,
      openedAt: now,
      lastProgressAt: now,
      requestedAt: 0,
      source: 'history',
      rpcFailures: 0,
      stuck: false,
      reportedAt: now,
    };
    this.gaps.set(key, opened);
    this.options.log.info(
      { chain: chainId, stream, from: stored + 1, to: height },
      'gap detected; requesting history',
    );
    const run = this.run(key, opened).finally(() => this.running.delete(run));
    this.running.add(run);
  }

  /** /health: degraded while a stream is stuck, naming the range it waits for. */
  health(): HealthCheckResult {
    const now = Date.now();
    const stuck = [...this.gaps.values()]
      .filter((gap) => this.isStuck(gap, now))
      .map((gap) => this.describe(gap, now));
    return stuck.length > 0 ? { status: 'degraded', stuck } : { status: 'ok' };
  }

  /** Sets the gap gauges of every open gap to now (called on each /metrics scrape, and every tick). */
  updateMetrics(): void {
    const now = Date.now();
    for (const gap of this.gaps.values()) {
      const labels = { chain: gap.chainId, stream: gap.stream };
      this.options.metrics.stuck.set(
        labels,
        this.isStuck(gap, now) ? Math.floor((now - gap.lastProgressAt) / 1000) : 0,
      );
      this.options.metrics.gapFrom.set(labels, gap.stored + 1);
      this.options.metrics.gapTo.set(labels, gap.target);
    }
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    clearInterval(this.watch);
    // An RPC read in flight ends at the runner's stop signal (RpcReader), else with its timeout; its chunks are
    // transactions, so not waiting is safe.
    await Promise.race([Promise.all(this.running), sleep(2_000)]);
  }

  private async run(key: string, gap: Gap): Promise<void> {
    const { log, historyTimeoutMs, retryMs } = this.options;
    const signal = this.stopController.signal;
    const labels = { chain: gap.chainId, stream: gap.stream };
    try {
      this.request(gap);
      while (!signal.aborted) {
        const stored = await this.options.storedHeight(gap.chainId, gap.stream).catch(() => gap.stored);
        const now = Date.now();
        if (stored > gap.stored) {
          gap.stored = stored;
          gap.lastProgressAt = now;
        } else if (stored < gap.stored) {
          // A database crash lost chunk writes committed without a flush (connector.chunkCommit): their
          // blocks are missing again, so the history is asked again from the height that is stored.
          log.warn(
            { chain: gap.chainId, stream: gap.stream, was: gap.stored, stored },
            'the stored height went back (writes lost in a database crash): requesting history from it',
          );
          gap.stored = stored;
          if (gap.source === 'history') this.request(gap);
        }
        if (gap.stored >= gap.target) break;
        if (gap.source === 'history' && (gap.historyError || now - gap.lastProgressAt >= historyTimeoutMs)) {
          gap.source = 'rpc';
          log.warn(
            {
              chain: gap.chainId,
              stream: gap.stream,
              from: gap.stored + 1,
              to: gap.target,
              reason: gap.historyError ?? `no history for ${historyTimeoutMs} ms`,
            },
            'history did not arrive: reading the gap from the RPC',
          );
        }
        if (now - gap.requestedAt >= retryMs && now - gap.lastProgressAt >= retryMs) this.request(gap);
        if (gap.source === 'rpc') {
          try {
            await this.options.fillFromRpc(gap.chainId, gap.stream, gap.target);
            if (gap.rpcError)
              log.info({ chain: gap.chainId, stream: gap.stream }, 'the RPC answers again; filling the gap');
            gap.rpcError = undefined;
            gap.rpcFailures = 0;
          } catch (err) {
            if (err instanceof RpcReaderStoppedError) {
              // Cut off by the stop (the Connector's own stop comes next): no failure, read after the restart.
              await sleep(this.options.tickMs ?? 200, signal);
              continue;
            }
            gap.rpcFailures += 1;
            if (!gap.rpcError)
              log.warn(
                { chain: gap.chainId, stream: gap.stream, err: (err as Error).message },
                'reading the gap from the RPC failed; retrying',
              );
            gap.rpcError = (err as Error).message;
            await sleep(backoffMs(gap.rpcFailures, 250, 5_000), signal);
          }
          continue;
        }
        await sleep(this.options.tickMs ?? 200, signal);
      }
    } finally {
      this.gaps.delete(key);
      if (!signal.aborted) {
        const ms = Date.now() - gap.openedAt;
        log.info(
          { chain: gap.chainId, stream: gap.stream, height: gap.stored, source: gap.source, ms },
          gap.stuck ? 'stuck stream caught up' : 'gap filled',
        );
      }
      this.options.metrics.stuck.set(labels, 0);
      this.options.metrics.gapFrom.set(labels, 0);
      this.options.metrics.gapTo.set(labels, 0);
    }
  }

  private request(gap: Gap): void {
    const start = gap.stored + 1;
    const end = gap.target;
    gap.requestedAt = Date.now();
    const stop = this.stopController.signal;
    this.options.requestHistory(gap.chainId, gap.stream, start, end, stop).then(
      () => (gap.historyError = undefined),
      (err) => {
        if (stop.aborted) return; // cut off by the stop
        if (!gap.historyError)
          this.options.log.warn(
            { chain: gap.chainId, stream: gap.stream, start, end, err: (err as Error).message },
            'history request failed',
          );
        gap.historyError = (err as Error).message;
      },
    );
  }

  private isStuck(gap: Gap, now: number): boolean {
    return now - gap.lastProgressAt >= 2 * this.options.historyTimeoutMs;
  }

  private describe(gap: Gap, now: number) {
    return {
      chain: gap.chainId,
      stream: gap.stream,
      stuckSeconds: Math.floor((now - gap.lastProgressAt) / 1000),
      waitingFor: { from: gap.stored + 1, to: gap.target },
      source: gap.source,
      ...(gap.rpcError ? { rpcError: gap.rpcError } : {}),
      ...(gap.historyError ? { historyError: gap.historyError } : {}),
    };
  }

  /** Metrics every tick; a log line when the stuck state changes and every reportIntervalMs while stuck. */
  private signal(gap: Gap, now: number): void {
    const stuck = this.isStuck(gap, now);
    this.updateMetrics();
    const { log, reportIntervalMs } = this.options;
    if (stuck && (!gap.stuck || now - gap.reportedAt >= reportIntervalMs)) {
      log.warn(this.describe(gap, now), gap.stuck ? 'stream still stuck' : 'stream stuck');
      gap.reportedAt = now;
    } else if (!stuck && gap.stuck) {
      log.info({ chain: gap.chainId, stream: gap.stream, height: gap.stored }, 'stuck stream moves again');
    }
    gap.stuck = stuck;
  }
}
