/**
 * The dashboard's verdicts by case over block time (GET /dashboard/verdicts), from Points' projection.
 */
import { z } from 'zod';
import type { Queryable } from '../../shared/db/pool.js';
import { windowEndingAt } from './scoring.js';

const BUCKETS = 24;
const MIN_BUCKET_SECONDS = 60;

export const verdictsQuery = z.strictObject({
  /** Only verdicts with a block time after this (unix seconds); clamped to the look-back window. */
  since: z
    .string()
    .regex(/^[0-9]{1,12}$/)
    .transform(Number)
    .optional(),
});

export interface VerdictSeries {
  bucket_seconds: number;
  /** Bucket starts (unix seconds of block time), oldest first. */
  buckets: number[];
  /** Per kind ("normal", "case 1" … "case 7", "case 0", "unknown"): counts per bucket. */
  series: Record<string, number[]>;
  total: number;
}

const empty = (): VerdictSeries => ({
  bucket_seconds: MIN_BUCKET_SECONDS,
  buckets: [],
  series: {},
  total: 0,
});

/**
 * Verdicts by kind in up to 24 buckets of block time, only those in the look-back window (`windowDays`) ending
 * at the newest verdict's block time, and after `since` if given: the cost is the window's verdicts, never the
 * whole history. Anchored at the newest block time rather than the wall clock, so a chain whose time runs
 * ahead (the devnet) or has stopped still shows its last verdicts; the bounds are those of windowEndingAt.
 */
export async function verdictSeries(
  db: Queryable,
  options: { windowDays: number; since?: number },
): Promise<VerdictSeries> {
  // The newest verdict first (one index probe), then the window ending there.
  const { rows: newest } = await db.query<{ hi: string | null }>(
    'SELECT max(block_time) AS hi FROM points_verdicts',
  );
  if ((newest[0]?.hi ?? null) === null) return empty();
  const window = windowEndingAt(Number(newest[0]!.hi), options.windowDays);
  const after = Math.max(window.from, options.since ?? window.from);
  const { rows: bounds } = await db.query<{ lo: string | null; hi: string | null }>(
    `SELECT min(block_time) AS lo, max(block_time) AS hi FROM points_verdicts
      WHERE block_time > $1 AND block_time <= $2`,
    [after, window.to],
  );
  if ((bounds[0]?.lo ?? null) === null) return empty();
  const lo = Number(bounds[0]!.lo);
  const hi = Number(bounds[0]!.hi);
  // BUCKETS - 1: the first bucket starts at a multiple of the width, up to a width before lo, so the span
  // to cover is up to a width longer than hi - lo.
  const width = Math.max(MIN_BUCKET_SECONDS, Math.ceil((hi - lo + 1) / (BUCKETS - 1)));
  const first = lo - (lo % width);
  // Bounded by lo and hi: a verdict stored since the bounds were read (verdicts are not stored in block-time
  // order) would fall before the first bucket or past the last one, counted in the total and in no series.
  const { rows } = await db.query<{ bucket: string; kind: string; n: number }>(
    `SELECT (block_time - $3) / $4 AS bucket,
            CASE WHEN verdict->>'case' IS NOT NULL THEN 'case ' || (verdict->>'case') ELSE outcome END AS kind,
            count(*)::int AS n
       FROM points_verdicts WHERE block_time >= $1 AND block_time <= $2 GROUP BY 1, 2`,
    [lo, hi, first, width],
  );
  const count = Math.floor((hi - first) / width) + 1;
  const buckets = Array.from({ length: count }, (_, i) => first + i * width);
  const series: Record<string, number[]> = {};
  let total = 0;
  for (const row of rows) {
    (series[row.kind] ??= new Array<number>(count).fill(0))[Number(row.bucket)] = row.n;
    total += row.n;
  }
  return { bucket_seconds: width, buckets, series, total };
}
