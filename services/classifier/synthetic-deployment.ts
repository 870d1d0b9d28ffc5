/**
 * What a synthetic workload of swaps (swap-timeline.ts, swap-traffic.ts) runs against, for the tests and
 * benchmarks that drive the classifier without chains: the specs of many swaps of every case, the two chains
 * as the classifier is configured for them, and a DID support that answers the synthetic parties' names.
 */
import Fastify from 'fastify';
import fc from 'fast-check';
import type { ChainClientConfig } from '../../shared/config/index.js';
import { timelineSpec } from './reference-model.js';
import { CONTRACT, DID_NAMES, DST, REPUTATION, SRC, type TimelineSpec } from './swap-timeline.js';

/**
 * `count` swaps of every case, their windows overlapping in time; the same for the same seed. The starts are
 * spread evenly over 3 × count seconds: fast-check's bias toward small numbers would start a tenth of them in
 * the first seconds (25,000 swaps in one block at 250,000), which no network does. `lockAttacksOneIn`: how
 * rare a stranger's puppet lock with a swap's bid and a second lock of its agreement are (each costs its
 * sender a lock on chain): one timeline in 4 by default, as in the property tests; the benchmarks, whose
 * figures should be those of a network's traffic, take 50.
 */
export function swapSpecs(count: number, seed: number, lockAttacksOneIn = 4): TimelineSpec[] {
  return fc
    .sample(fc.tuple(fc.noBias(fc.nat({ max: 3 * count })), fc.integer()), { numRuns: count, seed })
    .map(([offset, specSeed], id) => ({
      ...fc.sample(timelineSpec(1_000 + offset, lockAttacksOneIn), { numRuns: 1, seed: specSeed })[0]!,
      id,
    }));
}

/** The benchmarks' rate of lock attacks (swapSpecs). */
export const BENCH_LOCK_ATTACKS_ONE_IN = 50;

/**
 * The source chain and the destination chain (with the reputation contract), with only what the classifier
 * reads of a chain client's configuration (no chain client runs).
 */
export const SYNTHETIC_CHAIN_CLIENTS = [
  { chainId: SRC.chainId, nativeChainId: String(SRC.evm), contractAddr: CONTRACT },
  {
    chainId: DST.chainId,
    nativeChainId: String(DST.evm),
    contractAddr: CONTRACT,
    reputationContractAddr: REPUTATION,
  },
] as ChainClientConfig[];

/** The real SDK's `/find/owner/{address}` over the synthetic parties' DID names, on a free loopback port. */
export async function startSyntheticDidSupport(): Promise<{ url: string; close(): Promise<void> }> {
  const app = Fastify();
  app.get<{ Params: { address: string } }>('/find/owner/:address', async (request) => ({
    data: (DID_NAMES[request.params.address.toLowerCase()] ?? []).map((name) => ({ name })),
  }));
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { url, close: () => app.close() };
}
