/**
 * DID names of addresses, from the DID support service the real SDK uses: `GET {didSupportUrl}/find/owner/
 * {address}` → `{code: 0, data:[{name}]}` (a `code` other than 0 is a failure, never "owns no DID"), asked checksummed
 * then lower-case (shared/otmoic/did-lookup.ts). Answers are cached for `ttlMs`; an address without a fresh answer is
 * unknown, so the swap that needs it waits (never a guess), and is fetched in the background with back-off
 * while the service is down. `onAnswer` tells the classifier which swaps to look at again. Lookups run beside
 * the batches (a batch never waits for one): stop() aborts those in flight, which are then no failure (not
 * counted, not logged) and are asked again after the restart (requestPendingDids).
 */
import type { Logger } from '../../shared/logging/logger.js';
import { redactUrl } from '../../shared/config/redact.js';
import { didNamesUnderAnyForm, namesOfFindOwnerAnswer } from '../../shared/otmoic/did-lookup.js';
import { outboundSignal } from '../../shared/runtime/deadline.js';

export interface DidNames {
  /** Names owned by `address` (lower-case) as known for the swap `bidId`; undefined: not known yet. */
  names(address: string, bidId: string): readonly string[] | undefined;
  /** Ask for an answer (idempotent); `onAnswer` runs when it arrives. */
  request(address: string): void;
  stop(): void;
}

export interface HttpDidOptions {
  url: string;
  ttlMs: number;
  timeoutMs?: number;
  log: Logger;
  onAnswer(address: string): Promise<void>;
  onFailure?(address: string, error: string): void;
  fetch?: typeof fetch;
}

const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;
/** The cache is swept of expired answers when it reaches this many entries (or twice its size after the last sweep). */
const SWEEP_AT_LEAST = 10_000;

export class HttpDidSource implements DidNames {
  private readonly cache = new Map<string, { names: readonly string[]; at: number }>();
  private readonly inFlight = new Set<string>();
  private sweepAt = SWEEP_AT_LEAST;
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;
  /** Aborted by stop(): lookups in flight end at once. */
  private readonly stopping = new AbortController();
  /** When lookups started failing with no answer since (ms); undefined while the service answers. */
  private failingSinceMs: number | undefined;

  constructor(private readonly options: HttpDidOptions) {}

  names(address: string): readonly string[] | undefined {
    const key = address.toLowerCase();
    const entry = this.cache.get(key);
    if (entry === undefined) return undefined;
    if (Date.now() - entry.at > this.options.ttlMs) {
      this.cache.delete(key);
      return undefined;
    }
    return entry.names;
  }

  /** Expired answers are dropped once the cache has doubled since the last sweep (never read again, they stayed). */
  private remember(address: string, names: readonly string[]): void {
    this.cache.set(address, { names, at: Date.now() });
    if (this.cache.size < this.sweepAt) return;
    const now = Date.now();
    for (const [key, entry] of this.cache) if (now - entry.at > this.options.ttlMs) this.cache.delete(key);
    this.sweepAt = Math.max(SWEEP_AT_LEAST, 2 * this.cache.size);
  }

  request(address: string): void {
    const key = address.toLowerCase();
    if (this.inFlight.has(key) || this.stopped) return;
    this.inFlight.add(key);
    void this.fetchWithRetry(key, MIN_BACKOFF_MS);
  }

  /** Seconds the DID support has failed every lookup (undefined: its last lookup was answered, or none ran). */
  failingForSeconds(nowMs = Date.now()): number | undefined {
    return this.failingSinceMs === undefined ? undefined : Math.floor((nowMs - this.failingSinceMs) / 1_000);
  }

  stop(): void {
    this.stopped = true;
    this.stopping.abort();
    for (const timer of this.timers) clearTimeout(timer);
  }

  /** Fetches one answer now (also used by a replay for addresses no verdict recorded). */
  async lookup(address: string): Promise<readonly string[]> {
    return didNamesUnderAnyForm(address, async (form) => {
      const target = `${this.options.url.replace(/\/$/, '')}/find/owner/${form}`;
      const response = await (this.options.fetch ?? fetch)(target, {
        signal: outboundSignal(this.options.timeoutMs ?? 5_000, this.stopping.signal),
      });
      if (!response.ok) throw new Error(`DID support answered HTTP ${response.status}`);
      // A code other than 0 throws: the service failing, retried, never "owns no DID" (namesOfFindOwnerAnswer).
      return namesOfFindOwnerAnswer(await response.json());
    });
  }

  private async fetchWithRetry(address: string, backoffMs: number): Promise<void> {
    let answered = false;
    try {
      const names = await this.lookup(address);
      // Answered during the stop: the swaps are looked at again after the restart, not on a closing pool.
      if (this.stopped) return;
      answered = true;
      this.failingSinceMs = undefined;
      this.remember(address, names);
      this.inFlight.delete(address);
      await this.options.onAnswer(address);
    } catch (err) {
      // Cut off by the stop (or failing after it): no failure of the DID support; asked after the restart.
      if (this.stopped && !answered) return;
      const message = (err as Error).message;
      // The service failing, not the re-judging of its answer (the database): that one is retried alike.
      if (!answered) this.failingSinceMs ??= Date.now();
      this.options.onFailure?.(address, message);
      if (this.stopped) return;
      if (backoffMs === MIN_BACKOFF_MS)
        this.options.log.warn(
          { address, err: message, didSupportUrl: redactUrl(this.options.url) },
          'DID lookup failed; the swaps that need it wait',
        );
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void this.fetchWithRetry(address, Math.min(backoffMs * 2, MAX_BACKOFF_MS));
      }, backoffMs);
      timer.unref();
      this.timers.add(timer);
    }
  }
}

/**
 * For a replay: the DID names each live verdict recorded (so the replay decides on the same answers), and the
 * live source for swaps no verdict recorded yet.
 */
export class RecordedDidSource implements DidNames {
  constructor(
    private readonly recorded: ReadonlyMap<string, Readonly<Record<string, readonly string[]>>>,
    private readonly fallback: DidNames,
  ) {}

  names(address: string, bidId: string): readonly string[] | undefined {
    const forSwap = this.recorded.get(bidId);
    if (forSwap !== undefined) return forSwap[address.toLowerCase()] ?? this.fallback.names(address, bidId);
    return this.fallback.names(address, bidId);
  }

  request(address: string): void {
    this.fallback.request(address);
  }

  stop(): void {
    this.fallback.stop();
  }
}
