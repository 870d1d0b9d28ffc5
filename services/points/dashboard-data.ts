/**
 * The dashboard's verdicts by case over block time (GET /dashboard/verdicts), from Points' projection.
 */
import { z } from 'zod';
import type { Pool } from '../../shared/db/pool.js';

const BUCKETS = 24;
const MIN_BUCKET_SECONDS = 60;

export const verdictsQuery = z.strictObject({
  /** Only verdicts with a block time after this (unix seconds); default: all. */
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

/** Verdicts by kind in up to 24 buckets of block time. */
export async function verdictSeries(db: Pool, since = 0): Promise<VerdictSeries> {
  const { rows: bounds } = await db.query<{ lo: string | null; hi: string | null }>(
    'SELECT min(block_time) AS lo, max(block_time) AS hi FROM points_verdicts WHERE block_time > $1',
    [since],
  );
  const lo = Number(bounds[0]?.lo ?? 0);
  const hi = Number(bounds[0]?.hi ?? 0);
  if (bounds[0]?.lo === null)
    return { bucket_seconds: MIN_BUCKET_SECONDS, buckets: [], series: {}, total: 0 };
  const width = Math.max(MIN_BUCKET_SECONDS, Math.ceil((hi - lo + 1) / BUCKETS));
  const first = lo - (lo % width);
  const { rows } = await db.query<{ bucket: string; kind: string; n: number }>(
    `SELECT (block_time - $2) / $3 AS bucket,
            CASE WHEN verdict->>'case' IS NOT NULL THEN 'case ' || (verdict->>'case') ELSE outcome END AS kind,
            count(*)::int AS n
       FROM points_verdicts WHERE block_time > $1 GROUP BY 1, 2`,
    [since, first, width],
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
