/**
 * The dashboard's own JSON (GET /dashboard/verdicts, GET /dashboard/pipeline): verdicts by case over block
 * time from Points' projection, and the pipeline's health from the process's metrics registry (the services
 * that share this process: with `npm start` all of them; a Points-only process shows only its own figures).
 */
import type { Registry } from 'prom-client';
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

export interface PipelineHealth {
  chains: Array<{
    chain: string;
    chain_client_height?: number;
    connector_height?: number;
    lag_blocks?: number;
  }>;
  consumers: Array<{ group: string; lag: number }>;
  commands: Record<string, Record<string, number>>;
  classifier: { pending: Record<string, number>; oldest_pending_age_seconds?: number };
}

type MetricJson = { name: string; values: Array<{ value: number; labels: Record<string, string | number> }> };

/** Heights and lag per chain, consumer lag per group, commands by status, from the metrics registry. */
export async function pipelineHealth(registry: Registry): Promise<PipelineHealth> {
  const metrics = (await registry.getMetricsAsJSON()) as unknown as MetricJson[];
  const values = (name: string) => metrics.find((m) => m.name === name)?.values ?? [];
  const chains = new Map<string, PipelineHealth['chains'][number]>();
  const chain = (id: string) => chains.get(id) ?? chains.set(id, { chain: id }).get(id)!;
  for (const v of values('chain_client_height'))
    chain(String(v.labels.instance)).chain_client_height = v.value;
  for (const v of values('connector_height'))
    if (v.labels.stream === 'swap') chain(String(v.labels.chain)).connector_height = v.value;
  for (const c of chains.values())
    if (c.chain_client_height !== undefined && c.connector_height !== undefined)
      c.lag_blocks = Math.max(0, c.chain_client_height - c.connector_height);

  const lag = new Map<string, number>();
  for (const v of values('bus_consumer_lag')) {
    const group = String(v.labels.group);
    lag.set(group, (lag.get(group) ?? 0) + v.value);
  }

  // Every service's "…_commands{status}" gauge (relay_commands, agent_…): one row per service.
  const commands: PipelineHealth['commands'] = {};
  for (const m of metrics) {
    const match = /^([a-z]+)_(?:commands|complaints)$/.exec(m.name);
    if (!match || !m.values.some((v) => v.labels.status !== undefined)) continue;
    const byStatus = (commands[match[1]!] ??= {});
    for (const v of m.values)
      byStatus[String(v.labels.status)] = (byStatus[String(v.labels.status)] ?? 0) + v.value;
  }

  const pending: Record<string, number> = {};
  for (const v of values('classifier_pending_swaps')) pending[String(v.labels.waiting_for)] = v.value;
  return {
    chains: [...chains.values()].sort((a, b) => a.chain.localeCompare(b.chain)),
    consumers: [...lag]
      .map(([group, n]) => ({ group, lag: n }))
      .sort((a, b) => a.group.localeCompare(b.group)),
    commands,
    classifier: {
      pending,
      oldest_pending_age_seconds: values('classifier_oldest_pending_age_seconds')[0]?.value,
    },
  };
}
