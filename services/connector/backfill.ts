import type { Logger } from '../../shared/logging/logger.js';
import type { Stream } from './heights.js';

export interface BackfillOptions {
  retryMs: number;
  log: Logger;
  request(chainId: string, stream: Stream, start: number, end: number): Promise<void>;
}

/**
 * Asks chain clients for missing blocks, once per gap: while a request covering the gap is recent, further
 * gap reports (every live chunk during a backfill is one) do not ask again. A request that made no progress
 * for `retryMs`, or failed, is made again on the next report.
 */
export class Backfiller {
  private readonly pending = new Map<string, { start: number; end: number; at: number }>();

  constructor(private readonly options: BackfillOptions) {}

  /** Blocks after `stored` up to `height` are missing. */
  report(chainId: string, stream: Stream, stored: number, height: number): void {
    const key = `${chainId}/${stream}`;
    const start = stored + 1;
    const current = this.pending.get(key);
    if (
      current &&
      current.start === start &&
      current.end >= height &&
      Date.now() - current.at < this.options.retryMs
    )
      return;
    this.pending.set(key, { start, end: height, at: Date.now() });
    this.options.log.info({ chain: chainId, stream, start, end: height }, 'gap detected; requesting history');
    this.options.request(chainId, stream, start, height).catch((err) => {
      this.pending.delete(key);
      this.options.log.warn(
        { chain: chainId, stream, start, end: height, err: (err as Error).message },
        'history request failed',
      );
    });
  }
}
