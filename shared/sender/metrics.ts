/** The gauges an operator watches on a service that sends transactions (relay, Agent), on its /metrics. */
import { Gauge, type Registry } from 'prom-client';
import { singleFlight } from '../runtime/single-flight.js';
import type { JobCounts } from './job-table.js';

/** What the gauges read at scrape time. */
export interface SenderSignals {
  /** The wallet's balance in wei (decimal string) at the last sender pass, when known. */
  balanceWei: () => string | undefined;
  /** Wall-clock ms when the oldest unconfirmed transaction was first signed, if any. */
  oldestUnconfirmedSinceMs: () => number | undefined;
  /** Jobs by status and their failures so far, read from the database at scrape time. */
  jobCounts: () => Promise<JobCounts>;
  /** Every status, so a status with no job reads 0 instead of vanishing. */
  statuses: readonly string[];
  /**
   * The statuses a job should pass through quickly (before it is signed), whose oldest job's age is
   * `<prefix>_oldest_waiting_seconds{status}`: a job stuck there is signed by nobody, so the unconfirmed gauge
   * never sees it.
   */
  waitingStatuses: readonly string[];
}

/**
 * `<prefix>_wallet_balance_wei`, `<prefix>_oldest_unconfirmed_seconds`, `<jobsByStatus.name>{status}`,
 * `<prefix>_oldest_waiting_seconds{status}` and
 * `<prefix>_job_failures` (every failure so far, a re-opened job's again: it never goes down, so a new
 * failure shows even when a re-open took the failed count back first; the notifier names its alerts by it).
 * `wallet` and `transactions` name them in the help texts ("the relay wallet", "unconfirmed relay transaction").
 */
export function registerSenderGauges(
  registry: Registry,
  options: {
    prefix: string;
    wallet: string;
    transactions: string;
    jobsByStatus: { name: string; help: string };
  },
  signals: SenderSignals,
): void {
  // Both gauges are collected at once: they share one read in flight. A failed read keeps the last values.
  const countsNow = singleFlight(() => signals.jobCounts().catch(() => undefined));
  new Gauge({
    name: options.jobsByStatus.name,
    help: options.jobsByStatus.help,
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const counts = await countsNow();
      if (counts === undefined) return;
      for (const status of signals.statuses) this.set({ status }, counts.byStatus[status] ?? 0);
    },
  });
  new Gauge({
    name: `${options.prefix}_oldest_waiting_seconds`,
    help: `Seconds the ${options.transactions} job longest in each status before signing has been in it (0 when none)`,
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const counts = await countsNow();
      if (counts === undefined) return;
      for (const status of signals.waitingStatuses) this.set({ status }, counts.oldestSeconds[status] ?? 0);
    },
  });
  new Gauge({
    name: `${options.prefix}_job_failures`,
    help: `Failures of ${options.transactions} jobs so far, from the database: each failure once, a re-opened job's again; never decreases`,
    registers: [registry],
    async collect() {
      const counts = await countsNow();
      if (counts !== undefined) this.set(counts.failures);
    },
  });
  new Gauge({
    name: `${options.prefix}_wallet_balance_wei`,
    help: `Balance of the ${options.wallet} wallet in wei at the last sender pass (float: precise to ~16 digits)`,
    registers: [registry],
    collect() {
      const balance = signals.balanceWei();
      if (balance !== undefined) this.set(Number(balance));
    },
  });
  new Gauge({
    name: `${options.prefix}_oldest_unconfirmed_seconds`,
    help: `Age of the oldest signed but unconfirmed ${options.transactions} transaction (0 when none)`,
    registers: [registry],
    collect() {
      const since = signals.oldestUnconfirmedSinceMs();
      this.set(since === undefined ? 0 : Math.max(0, (Date.now() - since) / 1000));
    },
  });
}
