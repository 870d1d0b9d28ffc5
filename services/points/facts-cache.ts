/**
 * An in-process cache of each subject's facts (the block times of its deductions; an LP's counted swaps with
 * prefix sums), so a score for any `at` is two binary searches instead of a database round trip. It only
 * answers while it hears about every change: the projection sends `pg_notify('points_changed', key)` in the
 * transaction that changes a subject (and the in-process consumer invalidates directly); when the LISTEN
 * connection is lost the cache is emptied and bypassed until it listens again. A load that overlaps an
 * invalidation of its own key (or a clear) is answered but not kept, so a stale load can never stay cached.
 */
import pg from 'pg';
import {
  DEDICATED_QUERY_TIMEOUT_MS,
  destroyConnection,
  endWithin,
  startHeartbeat,
} from '../../shared/db/dedicated-connection.js';
import type { Logger } from '../../shared/logging/logger.js';
import type { Window } from './scoring.js';
import { CLEAR_ALL_PAYLOAD, type LpFigures, type LpSwapFact, type PointsStore } from './store.js';

export const CHANGE_CHANNEL = 'points_changed';

/** The figures the queries need; the store answers them with SQL, the cache from memory. */
export interface FiguresSource {
  violationsInWindow(party: 'user' | 'lp', subject: string, window: Window): Promise<number>;
  lpFigures(lpId: string, window: Window): Promise<LpFigures>;
}

export const subjectKey = (party: 'user' | 'lp', subject: string) => `${party}:${subject}`;

/** Number of sorted values ≤ x. */
function upperBound(sorted: Float64Array, x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Facts in (from, to]: the difference of the counts up to each bound. */
const inWindowCount = (sorted: Float64Array, window: Window) =>
  upperBound(sorted, window.to) - upperBound(sorted, window.from);

interface LpSwaps {
  times: Float64Array;
  /** prefix[i] = figure over the first i swaps. */
  normal: Float64Array;
  responseSum: Float64Array;
  responseCount: Float64Array;
}

function lpSwapsOf(facts: LpSwapFact[]): LpSwaps {
  const n = facts.length;
  const s: LpSwaps = {
    times: new Float64Array(n),
    normal: new Float64Array(n + 1),
    responseSum: new Float64Array(n + 1),
    responseCount: new Float64Array(n + 1),
  };
  facts.forEach((f, i) => {
    s.times[i] = f.blockTime;
    s.normal[i + 1] = s.normal[i]! + (f.normal ? 1 : 0);
    const timed = f.normal && f.responseTimeSeconds !== null;
    s.responseSum[i + 1] = s.responseSum[i]! + (timed ? f.responseTimeSeconds! : 0);
    s.responseCount[i + 1] = s.responseCount[i]! + (timed ? 1 : 0);
  });
  return s;
}

type Entry =
  | { kind: 'times'; times: Float64Array }
  | { kind: 'lp-swaps'; swaps: LpSwaps }
  // More facts than maxFactsPerSubject: answered by SQL. Kept, so such a subject is not reloaded, limit + 1
  // rows, on every query; and kept across its changes too: facts are only ever added, so it stays over.
  | { kind: 'over-limit' };
const OVER_LIMIT: Entry = { kind: 'over-limit' };

/** A load in flight; `stale` once its key changed (or everything was cleared) after it started. */
interface Load {
  entry: Promise<Entry>;
  stale: boolean;
}

export class FactsCache implements FiguresSource {
  /** In least recently used order (a hit moves its key to the end; the first is evicted). */
  private readonly entries = new Map<string, Entry>();
  /** Loads in flight, by key: none of them stale (a stale one leaves the map). */
  private readonly loading = new Map<string, Load>();
  private listening = false;

  constructor(
    private readonly store: PointsStore,
    private readonly options: {
      maxEntries?: number;
      maxFactsPerSubject?: number;
      /** Told when the cache starts or stops answering (a metric). */
      onListening?: (listening: boolean) => void;
    } = {},
  ) {}

  /** Whether the cache is answering (it is bypassed while it cannot hear about changes). */
  get enabled(): boolean {
    return this.listening;
  }

  setListening(listening: boolean): void {
    this.listening = listening;
    this.clear();
    this.options.onListening?.(listening);
  }

  invalidate(key: string): void {
    // A load of this key in flight may have read the state before this change: not kept, not shared. Loads of
    // other keys are (a busy LP's load is up to maxFactsPerSubject rows, and other subjects change all the time).
    const inFlight = this.loading.get(key);
    if (inFlight) {
      inFlight.stale = true;
      this.loading.delete(key);
    }
    if (this.entries.get(key) !== OVER_LIMIT) this.entries.delete(key);
  }

  /** Forgets everything cached about one `party:subject`. */
  invalidateSubject(key: string): void {
    this.invalidate(`deductions:${key}`);
    this.invalidate(`swaps:${key}`);
  }

  clear(): void {
    for (const inFlight of this.loading.values()) inFlight.stale = true;
    this.loading.clear();
    this.entries.clear();
  }

  async violationsInWindow(party: 'user' | 'lp', subject: string, window: Window): Promise<number> {
    if (!this.listening) return this.store.violationsInWindow(party, subject, window);
    const entry = await this.entry(`deductions:${subjectKey(party, subject)}`, async () => {
      const times = await this.store.deductionTimes(party, subject, this.limit + 1);
      return times.length > this.limit ? OVER_LIMIT : { kind: 'times', times: Float64Array.from(times) };
    });
    if (entry.kind !== 'times') return this.store.violationsInWindow(party, subject, window);
    return inWindowCount(entry.times, window);
  }

  async lpFigures(lpId: string, window: Window): Promise<LpFigures> {
    if (!this.listening) return this.store.lpFigures(lpId, window);
    const [violations, entry] = await Promise.all([
      this.violationsInWindow('lp', lpId, window),
      this.entry(`swaps:${subjectKey('lp', lpId)}`, async () => {
        const facts = await this.store.lpSwapFacts(lpId, this.limit + 1);
        return facts.length > this.limit ? OVER_LIMIT : { kind: 'lp-swaps', swaps: lpSwapsOf(facts) };
      }),
    ]);
    if (entry.kind !== 'lp-swaps') return this.store.lpFigures(lpId, window);
    const s = entry.swaps;
    const lo = upperBound(s.times, window.from);
    const hi = upperBound(s.times, window.to);
    return {
      violations,
      decidedSwaps: hi - lo,
      normalSwaps: s.normal[hi]! - s.normal[lo]!,
      responseSecondsSum: s.responseSum[hi]! - s.responseSum[lo]!,
      responseCount: s.responseCount[hi]! - s.responseCount[lo]!,
    };
  }

  private get limit(): number {
    return this.options.maxFactsPerSubject ?? 100_000;
  }

  private async entry(key: string, load: () => Promise<Entry>): Promise<Entry> {
    const cached = this.entries.get(key);
    if (cached) {
      this.entries.delete(key);
      this.entries.set(key, cached);
      return cached;
    }
    // Requests that miss together share one load, unless its key changed since it started (then it left
    // `loading`: it may have read the state before that change).
    const inFlight = this.loading.get(key);
    if (inFlight) return inFlight.entry;
    const started: Load = { entry: Promise.resolve(OVER_LIMIT), stale: false };
    started.entry = this.load(key, load, started).finally(() => {
      if (this.loading.get(key) === started) this.loading.delete(key);
    });
    this.loading.set(key, started);
    return started.entry;
  }

  private async load(key: string, load: () => Promise<Entry>, started: Load): Promise<Entry> {
    const loaded = await load();
    // Kept only if its key did not change meanwhile (the load may have read the state before that change).
    if (this.listening && !started.stale) {
      this.entries.set(key, loaded);
      if (this.entries.size > (this.options.maxEntries ?? 200_000)) {
        const leastRecent = this.entries.keys().next().value;
        if (leastRecent !== undefined) this.entries.delete(leastRecent);
      }
    }
    return loaded;
  }
}

/** How often the LISTEN connection is asked a `SELECT 1`, and how long its answer may take. */
const HEARTBEAT_MS = 10_000;
const HEARTBEAT_TIMEOUT_MS = 5_000;

/**
 * Keeps a LISTEN connection on CHANGE_CHANNEL and feeds the cache: every notification invalidates its
 * subject; a lost connection empties and bypasses the cache until it listens again. A connection dropped
 * silently (a NAT or firewall that forgot it sends neither an error nor an end) is found by a heartbeat: a
 * `SELECT 1` not answered within `heartbeatTimeoutMs` counts as lost; without it the cache answered from what
 * it could no longer hear about, for ever, and stop() waited for ever for the server's goodbye.
 */
export function listenForChanges(options: {
  dbUrl: string;
  cache: FactsCache;
  log: Logger;
  heartbeatMs?: number;
  heartbeatTimeoutMs?: number;
}): {
  stop(): Promise<void>;
} {
  const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? HEARTBEAT_TIMEOUT_MS;
  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let stopHeartbeat = () => undefined as void;
  const connect = async () => {
    if (stopped) return;
    const c = new pg.Client({
      connectionString: options.dbUrl,
      application_name: 'otmoic-points-listen',
      connectionTimeoutMillis: DEDICATED_QUERY_TIMEOUT_MS,
    });
    client = c;
    const lost = (reason: string) => {
      if (client !== c) return;
      client = undefined;
      stopHeartbeat();
      options.cache.setListening(false);
      destroyConnection(c);
      if (!stopped) {
        options.log.warn({ reason }, 'points change listener lost; score cache bypassed until it reconnects');
        retry = setTimeout(() => void connect(), 1_000);
      }
    };
    c.on('error', (err) => lost(err.message));
    c.on('end', () => lost('connection ended'));
    c.on('notification', (n) => {
      if (n.channel !== CHANGE_CHANNEL || !n.payload) return;
      if (n.payload === CLEAR_ALL_PAYLOAD) return options.cache.clear();
      for (const key of n.payload.split('\n')) options.cache.invalidateSubject(key);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANGE_CHANNEL}`);
      if (client === c) {
        options.cache.setListening(true);
        stopHeartbeat = startHeartbeat(c, {
          everyMs: heartbeatMs,
          timeoutMs: heartbeatTimeoutMs,
          onLate: (reason) => lost(`heartbeat: ${reason}`),
        });
      }
    } catch (err) {
      lost((err as Error).message);
    }
  };
  void connect();
  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      stopHeartbeat();
      const c = client;
      client = undefined;
      options.cache.setListening(false);
      // The server's goodbye never comes over a connection dropped silently: waited for a heartbeat's time.
      if (c) await endWithin(c, heartbeatTimeoutMs);
    },
  };
}
