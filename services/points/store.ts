/**
 * Points' projection tables in one schema (the live 'public', or a replay's fresh one): the writes of the
 * consumer and the reads of the queries. Reads are named prepared statements: each query is one round trip
 * and one index range scan (see migrations.ts), parsed and planned once per connection.
 */
import type { Queryable } from '../../shared/db/pool.js';
import type { SwapTransaction, SwapVerdict } from '../../topics/swap.verdicts.js';
import { LIVE_SCHEMA, quoteIdentifier } from './migrations.js';
import { changedSubjects, type ComplaintRow, type Effect } from './projection.js';
import type { LpStats, Window } from './scoring.js';

export interface DeductionRecord {
  bidId: string;
  party: 'user' | 'lp';
  subject: string;
  case: number;
  srcChainId: string;
  dstChainId: string | null;
  chainId: string;
  blockTime: number;
  rule: string;
  tenths: number;
  transactions: SwapTransaction[];
}

export interface RecordCursor {
  blockTime: number;
  bidId: string;
}

export interface LpFigures extends LpStats {
  violations: number;
}

/** One counted swap of an LP, as the score cache keeps it. */
export interface LpSwapFact {
  blockTime: number;
  normal: boolean;
  responseTimeSeconds: number | null;
}

export interface LpRankingRow extends LpFigures {
  lpId: string;
}

export class PointsStore {
  private readonly s: string;
  private readonly tag: string;

  constructor(
    private readonly db: Queryable,
    readonly schema: string = LIVE_SCHEMA,
  ) {
    this.s = quoteIdentifier(schema);
    this.tag = schema === LIVE_SCHEMA ? 'points' : `points_${schema}`;
  }

  /**
   * Writes the rows of any number of events: one statement per kind of row. Idempotent on its own (a swap
   * has one row of each kind, a complaint is keyed by its event), and run inside applyOnce / applyOnceBatch.
   */
  async apply(tx: Queryable, effects: readonly Effect[]): Promise<void> {
    // Every Points process caches scores (facts-cache.ts): tell them, at commit, whose facts changed.
    const changed = this.schema === LIVE_SCHEMA ? changedSubjects(effects) : [];
    for (const payload of notifyPayloads(changed))
      await tx.query(`SELECT pg_notify('points_changed', $1)`, [payload]);
    // Each kind's rows as one JSON array of the row objects as they are: a column of JSON documents in a
    // text[] costs the driver an escape of every quote, and twelve arrays are twelve copies.
    const deductions = effects.flatMap((e) => (e.kind === 'deduction' ? [e.row] : []));
    if (deductions.length > 0) {
      await tx.query(
        `INSERT INTO ${this.s}.points_deductions (bid_id, party, subject, arbitration_case, src_chain_id,
           dst_chain_id, chain_id, block_time, rule, tenths, transactions, event_id)
         SELECT "bidId", party, subject, "case", "srcChainId", "dstChainId", "chainId", "blockTime", rule, tenths,
           transactions, "eventId"
         FROM json_to_recordset($1::json) AS r("bidId" text, party text, subject text, "case" int,
           "srcChainId" text, "dstChainId" text, "chainId" text, "blockTime" bigint, rule text, tenths int,
           transactions jsonb, "eventId" text)
         ON CONFLICT (bid_id) DO NOTHING`,
        [JSON.stringify(deductions)],
      );
    }
    const verdicts = effects.flatMap((e) => (e.kind === 'verdict' ? [e.row] : []));
    if (verdicts.length > 0) {
      await tx.query(
        `INSERT INTO ${this.s}.points_verdicts (bid_id, outcome, block_time, verdict, event_id)
         SELECT "bidId", outcome, "blockTime", verdict, "eventId"
         FROM json_to_recordset($1::json) AS r("bidId" text, outcome text, "blockTime" bigint, verdict jsonb,
           "eventId" text)
         ON CONFLICT (bid_id) DO NOTHING`,
        [JSON.stringify(verdicts)],
      );
    }
    const lpSwaps = effects.flatMap((e) => (e.kind === 'lp-swap' ? [e.row] : []));
    if (lpSwaps.length > 0) {
      await tx.query(
        `INSERT INTO ${this.s}.points_lp_swaps (bid_id, lp_id, block_time, normal, response_time_seconds)
         SELECT "bidId", "lpId", "blockTime", normal, "responseTimeSeconds"
         FROM json_to_recordset($1::json) AS r("bidId" text, "lpId" text, "blockTime" bigint, normal boolean,
           "responseTimeSeconds" bigint)
         ON CONFLICT (bid_id) DO NOTHING`,
        [JSON.stringify(lpSwaps)],
      );
    }
    const complaints = effects.flatMap((e) => (e.kind === 'complaint' ? [e.row] : []));
    if (complaints.length > 0) {
      await tx.query(
        `INSERT INTO ${this.s}.points_complaints (event_id, bid_id, chain_id, tx_hash, block_number,
           block_time, complainant, fields)
         SELECT "eventId", "bidId", "chainId", "txHash", "blockNumber", "blockTime", complainant, fields
         FROM json_to_recordset($1::json) AS r("eventId" text, "bidId" text, "chainId" text, "txHash" text,
           "blockNumber" bigint, "blockTime" bigint, complainant text, fields jsonb)
         ON CONFLICT (event_id) DO NOTHING`,
        [JSON.stringify(complaints)],
      );
    }
  }

  /** Violations of one subject inside the window. */
  async violationsInWindow(party: 'user' | 'lp', subject: string, window: Window): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>({
      name: `${this.tag}_violations_in_window`,
      text: `SELECT count(*)::int AS n FROM ${this.s}.points_deductions
             WHERE party = $1 AND subject = $2 AND block_time > $3 AND block_time <= $4`,
      values: [party, subject, window.from, window.to],
    });
    return rows[0]!.n;
  }

  /** Block times of a subject's deductions, ascending (at most `limit`). */
  async deductionTimes(party: 'user' | 'lp', subject: string, limit: number): Promise<number[]> {
    const { rows } = await this.db.query<{ t: string }>({
      name: `${this.tag}_deduction_times`,
      text: `SELECT block_time::text AS t FROM ${this.s}.points_deductions
             WHERE party = $1 AND subject = $2 ORDER BY block_time LIMIT $3`,
      values: [party, subject, limit],
    });
    return rows.map((r) => safeInteger(r.t));
  }

  /** An LP's counted swaps, ascending by block time (at most `limit`). */
  async lpSwapFacts(lpId: string, limit: number): Promise<LpSwapFact[]> {
    const { rows } = await this.db.query<{ t: string; normal: boolean; r: string | null }>({
      name: `${this.tag}_lp_swap_facts`,
      text: `SELECT block_time::text AS t, normal, response_time_seconds::text AS r FROM ${this.s}.points_lp_swaps
             WHERE lp_id = $1 ORDER BY block_time LIMIT $2`,
      values: [lpId, limit],
    });
    return rows.map((r) => ({
      blockTime: safeInteger(r.t),
      normal: r.normal,
      responseTimeSeconds: r.r === null ? null : safeInteger(r.r),
    }));
  }

  /** An LP's violations and swap statistics inside the window, in one round trip. */
  async lpFigures(lpId: string, window: Window): Promise<LpFigures> {
    const { rows } = await this.db.query<{
      violations: number;
      decided: number;
      normal: number;
      response_sum: string;
      response_count: number;
    }>({
      name: `${this.tag}_lp_figures`,
      text: `SELECT
               (SELECT count(*)::int FROM ${this.s}.points_deductions
                 WHERE party = 'lp' AND subject = $1 AND block_time > $2 AND block_time <= $3) AS violations,
               count(*)::int AS decided,
               (count(*) FILTER (WHERE normal))::int AS normal,
               (COALESCE(sum(response_time_seconds) FILTER (WHERE normal), 0))::text AS response_sum,
               (count(response_time_seconds) FILTER (WHERE normal))::int AS response_count
             FROM ${this.s}.points_lp_swaps
             WHERE lp_id = $1 AND block_time > $2 AND block_time <= $3`,
      values: [lpId, window.from, window.to],
    });
    const r = rows[0]!;
    return {
      violations: r.violations,
      decidedSwaps: r.decided,
      normalSwaps: r.normal,
      responseSecondsSum: safeInteger(r.response_sum),
      responseCount: r.response_count,
    };
  }

  /** Every LP with a counted swap or a violation in the window, with its figures (for the ranking). */
  async lpRanking(window: Window): Promise<LpRankingRow[]> {
    const { rows } = await this.db.query<{
      lp_id: string;
      violations: number;
      decided: number;
      normal: number;
      response_sum: string;
      response_count: number;
    }>({
      name: `${this.tag}_lp_ranking`,
      text: `WITH swaps AS (
               SELECT lp_id, count(*)::int AS decided, (count(*) FILTER (WHERE normal))::int AS normal,
                 COALESCE(sum(response_time_seconds) FILTER (WHERE normal), 0) AS response_sum,
                 (count(response_time_seconds) FILTER (WHERE normal))::int AS response_count
               FROM ${this.s}.points_lp_swaps WHERE block_time > $1 AND block_time <= $2 GROUP BY lp_id
             ), deductions AS (
               SELECT subject AS lp_id, count(*)::int AS violations FROM ${this.s}.points_deductions
               WHERE party = 'lp' AND block_time > $1 AND block_time <= $2 GROUP BY subject
             )
             SELECT COALESCE(s.lp_id, d.lp_id) AS lp_id, COALESCE(d.violations, 0) AS violations,
               COALESCE(s.decided, 0) AS decided, COALESCE(s.normal, 0) AS normal,
               COALESCE(s.response_sum, 0)::text AS response_sum, COALESCE(s.response_count, 0) AS response_count
             FROM swaps s FULL JOIN deductions d ON d.lp_id = s.lp_id`,
      values: [window.from, window.to],
    });
    return rows.map((r) => ({
      lpId: r.lp_id,
      violations: r.violations,
      decidedSwaps: r.decided,
      normalSwaps: r.normal,
      responseSecondsSum: safeInteger(r.response_sum),
      responseCount: r.response_count,
    }));
  }

  /** One page of a subject's deduction records that happened by `now`, newest first. */
  async deductionRecords(
    party: 'user' | 'lp',
    subject: string,
    now: number,
    limit: number,
    cursor: RecordCursor | null,
  ): Promise<DeductionRecord[]> {
    const { rows } = await this.db.query<DeductionRow>({
      name: `${this.tag}_deduction_records`,
      // Ordered by the table's columns (d.), not the text copy of block_time the list names alike: that would
      // sort as text, and sort every record of the subject on each page instead of walking the index.
      text: `SELECT d.bid_id, d.party, d.subject, d.arbitration_case, d.src_chain_id, d.dst_chain_id, d.chain_id,
               d.block_time::text AS block_time, d.rule, d.tenths, d.transactions
             FROM ${this.s}.points_deductions d
             WHERE d.party = $1 AND d.subject = $2 AND d.block_time <= $3
               AND ($4::bigint IS NULL OR (d.block_time, d.bid_id) < ($4::bigint, $5::text))
             ORDER BY d.block_time DESC, d.bid_id DESC LIMIT $6`,
      values: [party, subject, now, cursor?.blockTime ?? null, cursor?.bidId ?? null, limit],
    });
    return rows.map(toDeductionRecord);
  }

  async verdict(bidId: string): Promise<SwapVerdict | null> {
    const { rows } = await this.db.query<{ verdict: SwapVerdict }>(
      `SELECT verdict FROM ${this.s}.points_verdicts WHERE bid_id = $1`,
      [bidId],
    );
    return rows[0]?.verdict ?? null;
  }

  async complaints(bidId: string): Promise<ComplaintRow[]> {
    const { rows } = await this.db.query<{
      event_id: string;
      bid_id: string;
      chain_id: string;
      tx_hash: string;
      block_number: string;
      block_time: string;
      complainant: string;
      fields: Record<string, string>;
    }>(
      `SELECT c.event_id, c.bid_id, c.chain_id, c.tx_hash, c.block_number::text, c.block_time::text,
         c.complainant, c.fields
       FROM ${this.s}.points_complaints c WHERE c.bid_id = $1 ORDER BY c.block_time, c.event_id`,
      [bidId],
    );
    return rows.map((r) => ({
      eventId: r.event_id,
      bidId: r.bid_id,
      chainId: r.chain_id,
      txHash: r.tx_hash,
      blockNumber: safeInteger(r.block_number),
      blockTime: safeInteger(r.block_time),
      complainant: r.complainant,
      fields: r.fields,
    }));
  }
}

interface DeductionRow {
  bid_id: string;
  party: 'user' | 'lp';
  subject: string;
  arbitration_case: number;
  src_chain_id: string;
  dst_chain_id: string | null;
  chain_id: string;
  block_time: string;
  rule: string;
  tenths: number;
  transactions: SwapTransaction[];
}

function toDeductionRecord(r: DeductionRow): DeductionRecord {
  return {
    bidId: r.bid_id,
    party: r.party,
    subject: r.subject,
    case: r.arbitration_case,
    srcChainId: r.src_chain_id,
    dstChainId: r.dst_chain_id,
    chainId: r.chain_id,
    blockTime: safeInteger(r.block_time),
    rule: r.rule,
    tenths: r.tenths,
    transactions: r.transactions,
  };
}

/** bigint columns arrive as text; unix seconds and sums of seconds are far inside the safe integer range. */
function safeInteger(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new Error(`integer out of the safe range: ${text}`);
  return n;
}

/** PostgreSQL refuses a notification payload of 8,000 bytes or more: the keys go in as few as fit. */
const MAX_NOTIFY_BYTES = 7_000;
/** The payload that empties every cache: a key that cannot be sent (see notifyPayloads). Never a key. */
export const CLEAR_ALL_PAYLOAD = '*';

/**
 * The keys, joined by newlines into as few payloads as fit. A key that cannot go (it is over the size
 * alone, or holds a newline: an LP id is the LP's own string) makes the one payload CLEAR_ALL_PAYLOAD
 * instead: the notification is a cache hint, and a failed pg_notify would fail the transaction with the
 * data in it.
 */
export function notifyPayloads(keys: readonly string[]): string[] {
  if (keys.some((key) => key.includes('\n') || Buffer.byteLength(key) > MAX_NOTIFY_BYTES))
    return [CLEAR_ALL_PAYLOAD];
  const payloads: string[] = [];
  let current = '';
  for (const key of keys) {
    const next = current === '' ? key : `${current}\n${key}`;
    if (Buffer.byteLength(next) > MAX_NOTIFY_BYTES && current !== '') {
      payloads.push(current);
      current = key;
    } else current = next;
  }
  if (current !== '') payloads.push(current);
  return payloads;
}
