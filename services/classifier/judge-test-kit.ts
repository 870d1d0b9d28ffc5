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
import { SigningKey } from 'ethers';
import { bidId } from '../../shared/chain/bid-id.js';
import { swapDigest } from '../../shared/chain/otmoic-swap-eip712.js';
import {
  buildTimeline,
  DID_NAMES,
  DST,
  LP,
  LP_ID,
  REPUTATION_CHAIN,
  SRC,
  USER,
  type TimelineSpec,
} from './swap-timeline.js';
import { SYNTHETIC_CHAIN_CLIENTS } from './synthetic-deployment.js';
import { classifierDdl, classifierTables } from './tables.js';

/** The synthetic deployment's judge environment, its chains' clocks at `clocks`, complaints seen through `complaints`. */
export const envAt = (clocks: Record<string, number>, complaints = Number.POSITIVE_INFINITY): JudgeEnv => ({
  now: (chainId) => clocks[chainId],
  complaintsSeenThrough: () => complaints,
  evmChainId: (chainId) => ({ [SRC.chainId]: SRC.evm, [DST.chainId]: DST.evm })[chainId],
  swapChains: () => [SRC.chainId, DST.chainId],
  agreementLocks: () => [],
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

/** The address members of an OtmoicSwap Message, as its authors wrote them (each a string, in its own casing). */
export interface WrittenMembers {
  src_address: string;
  src_token: string;
  dst_address: string;
  dst_token: string;
}

/**
 * An honest swap with an LP complaint (HONEST_SWAP), its Message signed by the user and the LP with the address
 * members written as in `written` (the timeline's agreement where not given), its Complaint filled as the SDK
 * fills it (addresses as uint256 decimals, tokens verbatim) and its bid the LP node's hash of that. A token given
 * is also what the events carry: the chain client's checksummed source token, the uint256 tokenDst in decimal,
 * and the TransferIn's token as written.
 */
export function swapSignedAs(written: Partial<WrittenMembers>) {
  const t = buildTimeline({ ...HONEST_SWAP, complaint: { by: 'lp', at: 1001 } });
  const a = t.agreement;
  const m: WrittenMembers = {
    src_address: a.srcAddress,
    src_token: a.srcToken,
    dst_address: a.dstAddress,
    dst_token: a.dstToken,
    ...written,
  };
  // Written out as the SDK writes it, not through swapMessage: the Classifier's own reading is what is tested.
  const message = {
    src_chain_id: a.srcChainId,
    src_address: m.src_address,
    src_token: m.src_token,
    src_amount: a.srcAmount,
    dst_chain_id: a.dstChainId,
    dst_address: m.dst_address,
    dst_token: m.dst_token,
    dst_amount: a.dstAmount,
    dst_native_amount: a.dstNativeAmount,
    requestor: a.requestor,
    lp_id: a.lpId,
    agreement_reached_time: a.agreementReachedTime,
    expected_single_step_time: a.expectedSingleStepTime,
    tolerant_single_step_time: a.tolerantSingleStepTime,
    earliest_refund_time: a.earliestRefundTime,
  };
  const sign = (key: string, evm: number) =>
    new SigningKey(key).sign(swapDigest(message, evm, 'swap')).serialized;
  const userSign = sign(USER.privateKey, SRC.evm);
  const lpSign = sign(LP.privateKey, DST.evm);
  const complaint = {
    srcChainId: SRC.chainId,
    srcAddress: BigInt(m.src_address).toString(),
    srcToken: m.src_token,
    dstChainId: DST.chainId,
    dstAddress: BigInt(m.dst_address).toString(),
    dstToken: m.dst_token,
    srcAmount: a.srcAmount,
    dstAmount: a.dstAmount,
    dstNativeAmount: a.dstNativeAmount,
    requestor: a.requestor,
    lpId: LP_ID,
    expectedSingleStepTime: a.expectedSingleStepTime.toString(),
    tolerantSingleStepTime: a.tolerantSingleStepTime.toString(),
    earliestRefundTime: a.earliestRefundTime.toString(),
    agreementReachedTime: a.agreementReachedTime.toString(),
    userSign,
    lpSign,
  };
  const bid = bidId({
    ...complaint,
    srcChainId: BigInt(complaint.srcChainId),
    srcAddress: BigInt(complaint.srcAddress),
    dstChainId: BigInt(complaint.dstChainId),
    dstAddress: BigInt(complaint.dstAddress),
    expectedSingleStepTime: a.expectedSingleStepTime,
    tolerantSingleStepTime: a.tolerantSingleStepTime,
    earliestRefundTime: a.earliestRefundTime,
    agreementReachedTime: a.agreementReachedTime,
  });
  const tokens = {
    ...(written.src_token === undefined ? {} : { token: written.src_token }),
    ...(written.dst_token === undefined ? {} : { tokenDst: BigInt(written.dst_token).toString() }),
  };
  const events = Object.values(t.streams)
    .flat()
    .map((e): ChainEvent => {
      if (e.kind === 'TransferOut') return { ...e, ...tokens, bidId: bid, userSign, lpSign };
      if (e.kind === 'TransferIn' && written.dst_token !== undefined)
        return { ...e, token: written.dst_token };
      if (e.kind === 'Complaint') return { ...e, bidId: bid, complaint };
      return e;
    });
  const lock = events.find((e) => e.kind === 'TransferOut')!;
  if (lock.kind !== 'TransferOut') throw new Error('no TransferOut');
  return { bid, events, lock };
}
