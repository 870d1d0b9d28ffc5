/**
 * A cache in front of an outside service (KYC, DID). An entry is used for `refreshIntervalMs` after it was
 * fetched, then fetched again on its next use. When the service fails or times out, the last known value is
 * answered and flagged stale, and the service is not asked again for a short back-off, so a service that is
 * down costs the queries nothing but the flag. A refusal of one key (KeyRefusedError) is answered the same way
 * for that key only: the back-off is shared by every key, so anyone could otherwise keep it down for all.
 * A fetch the stop cut off (`stopSignal`) is answered the same way, but is no failure of the service: not
 * counted, not reported, no back-off.
 */
import { outboundSignal } from '../../shared/runtime/deadline.js';

/** The service answered but refused this key (a 4xx about the request): the service itself is up. */
export class KeyRefusedError extends Error {
  override readonly name = 'KeyRefusedError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export interface Lookup<T> {
  /** The value, or undefined when it was never fetched successfully. */
  value: T | undefined;
  /** True when the service could not be asked or failed: `value` is the last known one (or none). */
  stale: boolean;
  /** When `value` was fetched (ms since the epoch), or null. */
  fetchedAtMs: number | null;
}

export type LookupOutcome = 'cached' | 'fetched' | 'failed' | 'refused' | 'skipped';

export interface CachedLookupOptions<T> {
  name: string;
  fetch(key: string, signal: AbortSignal): Promise<T>;
  refreshIntervalMs: number;
  timeoutMs: number;
  /** After a failure the service is not asked for this long (default: min(refresh interval, 5 s)). */
  retryAfterFailureMs?: number;
  maxEntries?: number;
  clock?: () => number;
  onOutcome?(outcome: LookupOutcome): void;
  onError?(key: string, error: Error): void;
  /** The process stops (ServiceContext.stopSignal): a fetch in flight ends at once. */
  stopSignal?: AbortSignal;
}

interface Entry<T> {
  value: T;
  fetchedAtMs: number;
}

export class CachedLookup<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly inFlight = new Map<string, Promise<Lookup<T>>>();
  private downUntilMs = 0;
  private readonly clock: () => number;
  private readonly maxEntries: number;
  private readonly retryAfterFailureMs: number;

  constructor(private readonly options: CachedLookupOptions<T>) {
    this.clock = options.clock ?? Date.now;
    this.maxEntries = options.maxEntries ?? 500_000;
    this.retryAfterFailureMs = options.retryAfterFailureMs ?? Math.min(options.refreshIntervalMs, 5_000);
  }

  /** True while the service is in its back-off after a failure. */
  get down(): boolean {
    return this.clock() < this.downUntilMs;
  }

  get(key: string): Promise<Lookup<T>> {
    const now = this.clock();
    const entry = this.entries.get(key);
    if (entry && now - entry.fetchedAtMs < this.options.refreshIntervalMs) {
      this.options.onOutcome?.('cached');
      return Promise.resolve({ value: entry.value, stale: false, fetchedAtMs: entry.fetchedAtMs });
    }
    if (now < this.downUntilMs) {
      this.options.onOutcome?.('skipped');
      return Promise.resolve(this.staleAnswer(entry));
    }
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.fetch(key, entry).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return pending;
  }

  private async fetch(key: string, previous: Entry<T> | undefined): Promise<Lookup<T>> {
    try {
      const value = await this.options.fetch(
        key,
        outboundSignal(this.options.timeoutMs, this.options.stopSignal),
      );
      const fetchedAtMs = this.clock();
      this.remember(key, { value, fetchedAtMs });
      this.options.onOutcome?.('fetched');
      return { value, stale: false, fetchedAtMs };
    } catch (error) {
      if (this.options.stopSignal?.aborted) return this.staleAnswer(previous); // cut off by the stop
      const refused = error instanceof KeyRefusedError;
      if (!refused) this.downUntilMs = this.clock() + this.retryAfterFailureMs;
      this.options.onOutcome?.(refused ? 'refused' : 'failed');
      this.options.onError?.(key, error instanceof Error ? error : new Error(String(error)));
      return this.staleAnswer(previous);
    }
  }

  private staleAnswer(entry: Entry<T> | undefined): Lookup<T> {
    return { value: entry?.value, stale: true, fetchedAtMs: entry?.fetchedAtMs ?? null };
  }

  private remember(key: string, entry: Entry<T>): void {
    this.entries.delete(key); // re-insert: Map order is the eviction order (oldest fetch first)
    this.entries.set(key, entry);
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }
}
