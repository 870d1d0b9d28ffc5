import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Pool } from '../../shared/db/pool.js';
import { rowsOrNothing } from '../../shared/runtime/metrics.js';
import type { SwapVerdict } from '../../topics/index.js';
import type { ClassifierTables } from './tables.js';

export interface ClassifierMetrics {
  clock: Gauge<'chain' | 'stream'>;
  didLookups: Counter<'outcome'>;
  /** TransferOuts that are not the swap of the bid they name: 'foreign' (fields do not hash to it), 'copy'. */
  ignoredOuts: Counter<'reason'>;
  /** Events that came after their chain's clock had passed their block time, by whether their swap was decided. */
  lateEvents: Counter<'chain' | 'swap'>;
  /** Orphans removed because nothing can adopt them any more (orphan-retention.ts). */
  orphansRemoved: Counter;
  /** Counts a verdict and how long after its deciding block time (chain seconds) it was reached. */
  decided(verdict: SwapVerdict, deciderNow: number | undefined): void;
}

/** What an operator watches: verdicts by outcome and case, pending swaps and their age, decision lag, DID. */
export function classifierMetrics(
  registry: Registry,
  pool: Pool,
  tables: ClassifierTables,
): ClassifierMetrics {
  const verdicts = new Counter({
    name: 'classifier_verdicts_total',
    help: 'Verdicts published, by outcome and arbitration case',
    labelNames: ['outcome', 'case'],
    registers: [registry],
  });
  const lag = new Histogram({
    name: 'classifier_decision_lag_seconds',
    help: "Deciding chain's block time when a verdict was reached, minus the block time that settled it",
    labelNames: ['chain'],
    buckets: [1, 5, 15, 30, 60, 120, 300, 900, 3600],
    registers: [registry],
  });
  new Gauge({
    name: 'classifier_pending_swaps',
    help: 'Swaps without a verdict yet, by what they wait for (clock: a window to close; complaints: the reputation streams; did: the DID support service)',
    labelNames: ['waiting_for'],
    registers: [registry],
    async collect() {
      const rows = await rowsOrNothing(
        pool.query<{ kind: string | null; n: string }>(
          `SELECT wait_kind AS kind, count(*) AS n FROM ${tables.swaps} WHERE status = 'pending' GROUP BY wait_kind`,
        ),
      );
      if (!rows) return;
      this.reset();
      for (const kind of ['clock', 'complaints', 'did']) this.set({ waiting_for: kind }, 0);
      for (const r of rows) this.set({ waiting_for: r.kind ?? 'none' }, Number(r.n));
    },
  });
  new Gauge({
    name: 'classifier_orphan_events',
    help: 'Chain events whose swap is not known (yet): the other chain not read yet, a chain not followed, or events naming no lock (kept until every watched chain clock passed their expiry: classifier_orphans_removed_total)',
    registers: [registry],
    async collect() {
      const rows = await rowsOrNothing(
        pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${tables.orphans}`),
      );
      if (rows) this.set(Number(rows[0]!.n));
    },
  });
  new Gauge({
    name: 'classifier_oldest_pending_age_seconds',
    help: 'Wall-clock seconds since the oldest pending swap was first seen',
    registers: [registry],
    async collect() {
      const rows = await rowsOrNothing(
        pool.query<{ age: string | null }>(
          `SELECT EXTRACT(EPOCH FROM now() - min(first_seen_at))::bigint AS age FROM ${tables.swaps} WHERE status = 'pending'`,
        ),
      );
      if (rows) this.set(Number(rows[0]?.age ?? 0));
    },
  });
  /** A gauge of a table's rows by chain stream, read at scrape time. */
  const rowsByStream = (name: string, help: string, rows: string) =>
    new Gauge({
      name,
      help,
      labelNames: ['chain', 'stream'],
      registers: [registry],
      async collect() {
        const counts = await rowsOrNothing(
          pool.query<{ chain_id: string; stream: string; n: string }>(
            `SELECT chain_id, stream, count(*) AS n FROM ${rows} GROUP BY chain_id, stream`,
          ),
        );
        if (!counts) return;
        this.reset();
        for (const r of counts) this.set({ chain: r.chain_id, stream: r.stream }, Number(r.n));
      },
    });
  rowsByStream(
    'classifier_held_heights',
    'Heights waiting for an event: the last of their chunk, or one of their stream that was dead-lettered (classifier_dead_lettered_events); one that stays holds its chain clock',
    tables.pendingHeights,
  );
  // Released ones stay as tombstones, holding nothing.
  rowsByStream(
    'classifier_dead_lettered_events',
    'Chain events dead-lettered and not applied yet, by chain stream: each holds its clock (its swaps wait) until redriven and applied, or released (npm run classifier-holds)',
    `${tables.missingEvents} WHERE NOT released`,
  );
  const clock = new Gauge({
    name: 'classifier_chain_clock_seconds',
    help: "Each chain stream's clock: the newest block time up to which every event was handled",
    labelNames: ['chain', 'stream'],
    registers: [registry],
    // From the table at scrape time: after a restart, a chain whose heights stopped still shows its clock
    // (set only when a clock moves, it had no series, and an alert on its age could not fire).
    async collect() {
      const rows = await rowsOrNothing(
        pool.query<{ chain_id: string; stream: string; block_time: string }>(
          `SELECT chain_id, stream, block_time FROM ${tables.clocks}`,
        ),
      );
      if (!rows) return;
      for (const r of rows) this.set({ chain: r.chain_id, stream: r.stream }, Number(r.block_time));
    },
  });
  const didLookups = new Counter({
    name: 'classifier_did_lookups_total',
    help: 'DID support lookups, by outcome',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const ignoredOuts = new Counter({
    name: 'classifier_ignored_transfer_outs_total',
    help: "TransferOuts that are not their bid's swap: foreign (their own fields do not hash to the bid they name), copy (the agreement locked again, later in chain order)",
    labelNames: ['reason'],
    registers: [registry],
  });
  const lateEvents = new Counter({
    name: 'classifier_late_events_total',
    help: "Events that came after their chain's clock had passed their block time (published late by the Connector): swap=decided when their swap's verdict was already out and does not take them into account",
    labelNames: ['chain', 'swap'],
    registers: [registry],
  });
  const orphansRemoved = new Counter({
    name: 'classifier_orphans_removed_total',
    help: 'Orphan events removed because the event that would join them to a swap can no longer come: every watched chain clock passed their expiry (a TransferIn naming no lock, or a lock on a chain not watched, a confirm or refund of no swap)',
    registers: [registry],
  });
  return {
    clock,
    didLookups,
    ignoredOuts,
    lateEvents,
    orphansRemoved,
    decided(verdict, deciderNow) {
      verdicts.inc({ outcome: verdict.outcome, case: verdict.case === null ? 'none' : String(verdict.case) });
      if (deciderNow !== undefined)
        lag.observe({ chain: verdict.decidedOn }, Math.max(0, deciderNow - verdict.blockTime));
    },
  };
}
