/**
 * Test support for the classifier's decision and engine on the synthetic swaps (swap-timeline.ts): a judge's
 * environment at given clocks, the facts of a list of events, and an engine on fresh tables in a schema of
 * its own. Not used in production.
 */
import type { Pool } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logging/logger.js';
import type { ChainEvent } from '../../topics/index.js';
import { ClassifierEngine, type ClassifierInput, type EngineOptions } from './engine.js';
import { addFact, emptyFacts, type JudgeEnv, type SwapFacts } from './facts.js';
import { watchedChains } from './index.js';
import { buildTimeline, DID_NAMES, DST, REPUTATION_CHAIN, SRC, type TimelineSpec } from './swap-timeline.js';
import { SYNTHETIC_CHAIN_CLIENTS } from './synthetic-deployment.js';
import { classifierDdl, classifierTables } from './tables.js';

/** The synthetic deployment's judge environment, its chains' clocks at `clocks`, complaints seen through `complaints`. */
export const envAt = (clocks: Record<string, number>, complaints = Number.POSITIVE_INFINITY): JudgeEnv => ({
  now: (chainId) => clocks[chainId],
  complaintsSeenThrough: () => complaints,
  evmChainId: (chainId) => ({ [SRC.chainId]: SRC.evm, [DST.chainId]: DST.evm })[chainId],
  swapChains: () => [SRC.chainId, DST.chainId],
  didNames: (address) => DID_NAMES[address] ?? [],
});

/** A last height of every stream of the synthetic deployment, at `blockTimestamp`: every window closes. */
export const finalHeights = (blockTimestamp: number): ClassifierInput[] =>
  (
    [
      [SRC.chainId, 'swap'],
      [DST.chainId, 'swap'],
      [REPUTATION_CHAIN, 'reputation'],
    ] as const
  ).map(([chainId, stream]) => ({
    kind: 'height',
    id: `${chainId}:${stream}:final`,
    height: { chainId, stream, height: 10_000, blockTimestamp, lastEventId: null },
  }));

/** The facts of a bid after `events`, added in that order. */
export const factsOf = (bidId: string, events: readonly ChainEvent[]): SwapFacts =>
  events.reduce((facts, e) => addFact(facts, e), emptyFacts(bidId));

/** An engine of the synthetic deployment on fresh tables in schema `schema`, DID names answered at once. */
export async function syntheticEngine(
  pool: Pool,
  schema: string,
  resident?: EngineOptions['resident'],
  /** Options beside the synthetic deployment's (metrics, a log to read). */
  extra: Partial<EngineOptions> = {},
): Promise<{ engine: ClassifierEngine; tables: ReturnType<typeof classifierTables> }> {
  const tables = classifierTables(schema);
  await pool.query(`CREATE SCHEMA ${schema}; ${classifierDdl(tables)}`);
  const engine = new ClassifierEngine({
    pool,
    tables,
    group: schema,
    chains: watchedChains(SYNTHETIC_CHAIN_CLIENTS),
    did: {
      names: (a) => DID_NAMES[a.toLowerCase()] ?? [],
      request: () => undefined,
      stop: () => undefined,
    },
    log: createLogger({ level: 'silent' }),
    resident,
    ...extra,
  });
  return { engine, tables };
}

/** A normal swap: TransferOut at T, the LP's TransferIn at T+1, ConfirmOut at T+2, ConfirmIn at T+3 (E 3, Tol 2). */
export const HONEST_SWAP: TimelineSpec = {
  T: 1000,
  E: 3,
  Tol: 2,
  lpSign: 'lp',
  userSign: 'user',
  out: { kind: 'ok', at: 1000 },
  in: { kind: 'ok', at: 1001 },
  confirmOut: { by: 'user', at: 1002 },
  confirmIn: { by: 'lp', at: 1003 },
};

/**
 * A lock at 1,001 (T 1,000, E 2, Tol 1) that the LP never answers, its lpSign by `lpSign`: its TransferOut event
 * and facts. Judged once the clocks pass 1,010, it is case 3 with the LP's consent and case 2 without.
 */
export function unansweredLock(lpSign: TimelineSpec['lpSign'], id: number) {
  const timeline = buildTimeline({
    id,
    T: 1_000,
    E: 2,
    Tol: 1,
    lpSign,
    userSign: 'user',
    out: { kind: 'ok', at: 1_001 },
    in: { kind: 'none' },
  });
  const out = timeline.streams[SRC.chainId]![0]!;
  if (out.kind !== 'TransferOut') throw new Error('the timeline starts with no TransferOut');
  return { out, facts: addFact(emptyFacts(timeline.bidId), out) };
}

/** What engine.handleBatch needs beside its inputs, in a test: the first attempt, never aborted. */
export const batchContext = () => ({
  attempt: 1,
  lastAttempt: false,
  signal: new AbortController().signal,
  commitIn: async () => undefined,
});
