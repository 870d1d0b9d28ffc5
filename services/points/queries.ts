/**
 * The five queries and the LP ranking: figures from the projections, KYC and DID through their caches, the
 * answer shapes from answers.ts. "Now" is the wall clock in unix seconds unless the caller gives `at`.
 */
import {
  complaintAnswer,
  lpPointAnswer,
  lpScoreTenths,
  lpStatsAnswer,
  recordsAnswer,
  userPointAnswer,
  windowAnswer,
} from './answers.js';
import type { CachedLookup, Lookup } from './cached-lookup.js';
import { PointsError } from './errors.js';
import type { FiguresSource } from './facts-cache.js';
import { storedLpId } from './projection.js';
import { formatTenths, lpBasisTenths, windowEndingAt } from './scoring.js';
import type { LpRankingRow, PointsStore, RecordCursor } from './store.js';
import type { SwapVerdict } from '../../topics/swap.verdicts.js';

export interface PointsQueriesOptions {
  store: PointsStore;
  /** Where scores' figures come from: the score cache, or the store itself (default). */
  figures?: FiguresSource;
  windowDays: number;
  kyc: CachedLookup<boolean>;
  didNames: CachedLookup<string[]>;
  didOwner: CachedLookup<string | null>;
  /** Unix seconds; the wall clock unless a test moves time. */
  nowSeconds?: () => number;
}

const DEFAULT_RECORDS_LIMIT = 20;
const DEFAULT_RANKING_LIMIT = 100;
/** The ranking as of "now" aggregates every LP's window: it is reused for this many seconds (its `at` says when). */
export const RANKING_REUSE_SECONDS = 5;

const flag = <T>(lookup: Lookup<T>) => ({
  stale: lookup.stale,
  fetched_at: lookup.fetchedAtMs === null ? null : Math.floor(lookup.fetchedAtMs / 1000),
});

export class PointsQueries {
  private readonly nowSeconds: () => number;
  private readonly figures: FiguresSource;
  private latestRanking?: { now: number; rows: Promise<LpRankingRow[]> };

  constructor(private readonly options: PointsQueriesOptions) {
    this.figures = options.figures ?? options.store;
    this.nowSeconds = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  }

  private moment(at: number | undefined) {
    const now = at ?? this.nowSeconds();
    return { now, explicitAt: at !== undefined, window: windowEndingAt(now, this.options.windowDays) };
  }

  /** The address a DID name stands for (its owner at the DID support service), and how current that is. */
  async resolveDid(name: string): Promise<{ address: string } & ReturnType<typeof flag>> {
    const owner = await this.options.didOwner.get(name);
    if (owner.value === undefined) {
      throw new PointsError(
        'DID_UNAVAILABLE',
        `the DID support service is unavailable and ${name} was never resolved; retry later or query by address`,
      );
    }
    if (owner.value === null)
      throw new PointsError('DID_NOT_FOUND', `no owner is known for the DID name ${name}`);
    return { address: owner.value, ...flag(owner) };
  }

  async userPoint(query: { address?: string; did?: string; at?: number }) {
    // By DID name: its owner may be the last known one (the service down), and the answer must say so: a
    // name can move to another owner, and this answer would then be someone else's score.
    const resolved = query.did === undefined ? null : await this.resolveDid(query.did);
    const address = query.address ?? resolved!.address;
    const { now, explicitAt, window } = this.moment(query.at);
    const [violations, kyc, names] = await Promise.all([
      this.figures.violationsInWindow('user', address, window),
      this.options.kyc.get(address),
      this.options.didNames.get(address),
    ]);
    return userPointAnswer({
      address,
      at: now,
      explicitAt,
      window,
      violations,
      kyc: { verified: kyc.value, ...flag(kyc) },
      did: { names: names.value, ...flag(names) },
      resolvedFrom: resolved && { name: query.did!, stale: resolved.stale, fetched_at: resolved.fetched_at },
    });
  }

  async lpPoint(query: { lp_id: string; at?: number }) {
    const { now, explicitAt, window } = this.moment(query.at);
    const lpId = storedLpId(query.lp_id);
    const figures = await this.figures.lpFigures(lpId, window);
    return lpPointAnswer({ lpId, at: now, explicitAt, window, figures });
  }

  async deductionRecords(
    party: 'user' | 'lp',
    subject: string,
    query: { at?: number; limit?: number; cursor?: RecordCursor },
  ) {
    const { now, window } = this.moment(query.at);
    const limit = query.limit ?? DEFAULT_RECORDS_LIMIT;
    if (party === 'lp') subject = storedLpId(subject);
    const records = await this.options.store.deductionRecords(
      party,
      subject,
      now,
      limit,
      query.cursor ?? null,
    );
    return { subject: { kind: party, id: subject }, ...recordsAnswer({ records, limit, window, at: now }) };
  }

  /**
   * The dashboard's history of a subject: its score as of each block time of its newest `limit` deduction
   * records (oldest first), in one request rather than one per time (a busy LP's lookup was over 100, against
   * the rate limit).
   */
  async scoreHistory(party: 'user' | 'lp', subject: string, limit = 100) {
    // As the records name it (an LP id in its stored form: storedLpId).
    const { subject: named, records } = await this.deductionRecords(party, subject, { limit });
    const times = [...new Set(records.map((r) => r.block_time))].sort((a, b) => a - b);
    const points = [];
    // One after another: each is a read of facts the cache mostly holds, and this is an operator's page.
    for (const at of times) {
      const answer =
        party === 'lp'
          ? await this.lpPoint({ lp_id: named.id, at })
          : await this.userPoint({ address: named.id, at });
      points.push({ at, score_tenths: answer.score_tenths });
    }
    return { subject: named, points };
  }

  /** As of `at` (like every query, DESIGN §6): complaints filed and a verdict reached by then. */
  async complaint(bidId: string, at?: number) {
    const [allComplaints, storedVerdict] = await Promise.all([
      this.options.store.complaints(bidId),
      this.options.store.verdict(bidId),
    ]);
    const complaints = at === undefined ? allComplaints : allComplaints.filter((c) => c.blockTime <= at);
    const verdict = at !== undefined && storedVerdict && reachedAt(storedVerdict) > at ? null : storedVerdict;
    if (complaints.length === 0 && verdict === null) {
      throw new PointsError('COMPLAINT_NOT_FOUND', `no complaint and no verdict is known for bid ${bidId}`);
    }
    return complaintAnswer(bidId, complaints, verdict);
  }

  /** Every LP with a counted swap or a violation in the window, best score first (ties: more swaps, then id). */
  async lpRanking(query: { at?: number; limit?: number }) {
    let { now, window } = this.moment(query.at);
    let rows: LpRankingRow[];
    const latest = this.latestRanking;
    if (query.at === undefined && latest && now - latest.now < RANKING_REUSE_SECONDS) {
      now = latest.now;
      window = windowEndingAt(now, this.options.windowDays);
      rows = await latest.rows;
    } else {
      const computing = this.options.store.lpRanking(window);
      if (query.at === undefined) {
        this.latestRanking = { now, rows: computing };
        computing.catch(() => (this.latestRanking = undefined));
      }
      rows = await computing;
    }
    const ranked = rows
      .map((figures) => ({ figures, scoreTenths: lpScoreTenths(figures) }))
      .sort(
        (a, b) =>
          b.scoreTenths - a.scoreTenths ||
          b.figures.decidedSwaps - a.figures.decidedSwaps ||
          (a.figures.lpId < b.figures.lpId ? -1 : a.figures.lpId > b.figures.lpId ? 1 : 0),
      )
      .slice(0, query.limit ?? DEFAULT_RANKING_LIMIT);
    return {
      at: now,
      window: windowAnswer(window),
      lps: ranked.map(({ figures, scoreTenths }, index) => ({
        rank: index + 1,
        lp_id: figures.lpId,
        score: formatTenths(scoreTenths),
        score_tenths: scoreTenths,
        basis_tenths: lpBasisTenths(figures).basisTenths,
        violations: figures.violations,
        statistics: lpStatsAnswer(figures),
      })),
      total: rows.length,
    };
  }
}

/**
 * When a verdict was reached, at the earliest: its block time, or the latest block time of the transactions it
 * rests on when that is later. A verdict's block time is that of its deciding fact (case 1: T+E; case 2 by
 * complaint: the TransferOut), but one that answers a complaint could not be reached before that complaint was
 * filed (nor before the other transactions it lists): as of an earlier moment it, and the complaint it shows,
 * had not happened.
 */
function reachedAt(verdict: SwapVerdict): number {
  let reached = verdict.blockTime;
  for (const t of verdict.transactions) if (t.blockTime > reached) reached = t.blockTime;
  return reached;
}
