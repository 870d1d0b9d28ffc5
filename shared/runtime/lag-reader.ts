import type { EventBus, PartitionLag } from '../bus/port.js';
import type { Logger } from '../logging/logger.js';
import { withDeadline } from './deadline.js';
import { shownHealthError, type HealthCheckResult } from './http.js';
import { singleFlight } from './single-flight.js';

/** A read this recent is served as is. */
const FRESH_MS = 1_000;
/** How long a scrape waits for a read in flight before it takes the last one (Prometheus gives 10 s). */
const SCRAPE_WAIT_MS = 2_000;
/** /health says the bus is not answering once no read succeeded for this long. */
const STALE_MS = 15_000;
/** The group of the read that only checks the bus answers, when no group is tracked. */
const PING_GROUP = 'otmoic-bus-health';

/**
 * The tracked consumer groups' lag, read once for every reader at the same time (a scrape, /health, the
 * dashboard, the notifier's look), each waiting at most SCRAPE_WAIT_MS and then taking the last read. On
 * Kafka a read goes to the broker: with the broker down it took about 13 s for five groups, so every scrape
 * timed out and lost every figure of the process, and /health, which did not look at the bus, said ok.
 */
export class LagReader {
  private readonly groups = new Map<string, readonly string[]>();
  private last: PartitionLag[] = [];
  private readAt: number | undefined;
  /** When the read in flight started (a read that never ends must not look like a bus that answers). */
  private readingSince: number | undefined;
  private failure: string | undefined;
  private readonly read = singleFlight(() => this.readAll());

  private readonly timing: { freshMs: number; waitMs: number; staleMs: number };

  constructor(
    private readonly bus: () => EventBus | undefined,
    private readonly log: Logger,
    timing: Partial<LagReader['timing']> = {},
    private readonly now: () => number = () => Date.now(),
  ) {
    this.timing = { freshMs: FRESH_MS, waitMs: SCRAPE_WAIT_MS, staleMs: STALE_MS, ...timing };
  }

  track(group: string, topics: readonly string[]): void {
    this.groups.set(group, topics);
  }

  /** The last lag read, after a new read when the last is older than `freshMs` and one answers in time. */
  async lags(): Promise<readonly PartitionLag[]> {
    await this.refresh(this.timing.waitMs);
    return this.last;
  }

  /** Seconds since the lag was last read (undefined: never). */
  get ageSeconds(): number | undefined {
    return this.readAt === undefined ? undefined : (this.now() - this.readAt) / 1_000;
  }

  /**
   * `degraded` while the bus has not answered a read for `staleMs` (restarting would not help: not 503);
   * `unavailable` once a subscription of this process stopped for good (only a restart helps).
   */
  async health(): Promise<HealthCheckResult> {
    const stopped = this.bus()?.stoppedSubscriptions?.() ?? [];
    if (stopped.length > 0)
      return {
        status: 'unavailable',
        error: `consumer ${stopped.map((s) => `group ${s.group} stopped (${s.error})`).join('; ')}: restart the service`,
        stoppedGroups: stopped.map((s) => s.group),
      };
    await this.refresh(this.timing.waitMs / 2);
    const age = this.ageSeconds;
    const hung =
      this.readingSince !== undefined && this.now() - this.readingSince >= this.timing.staleMs
        ? `a read has been waiting for ${Math.round((this.now() - this.readingSince) / 1_000)} s`
        : undefined;
    const failure = this.failure ?? hung;
    if (failure === undefined || (age !== undefined && age * 1_000 < this.timing.staleMs))
      return { status: 'ok' };
    return {
      status: 'degraded',
      error: `the event bus does not answer: ${failure}`,
      lastAnsweredSecondsAgo: age === undefined ? null : Math.round(age),
    };
  }

  private async refresh(waitMs: number): Promise<void> {
    const fresh = this.readAt !== undefined && this.now() - this.readAt < this.timing.freshMs;
    if (fresh && this.failure === undefined) return;
    await withDeadline(this.read(), waitMs, () => new Error('lag read still running')).catch(() => undefined);
  }

  private async readAll(): Promise<void> {
    const bus = this.bus();
    if (!bus) return;
    this.readingSince = this.now();
    try {
      const lags: PartitionLag[] = [];
      if (this.groups.size === 0) await bus.lag(PING_GROUP, []);
      for (const [group, topics] of this.groups) lags.push(...(await bus.lag(group, topics)));
      this.last = lags;
      this.readAt = this.now();
      if (this.failure !== undefined) this.log.info('consumer lag is read again: the event bus answers');
      this.failure = undefined;
    } catch (err) {
      if (this.failure === undefined)
        this.log.warn(
          { err: (err as Error).message },
          'could not read consumer lag: the last figures are kept',
        );
      // Shown on the public /health: the code only, not the driver's text (hosts, users).
      this.failure = shownHealthError(err);
    } finally {
      this.readingSince = undefined;
    }
  }
}
