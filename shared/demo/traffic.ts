// The traffic simulator: rounds of swaps between several users and LPs at a configurable mix of kinds, then
// chain time moved past every window so the classifier decides them at once. The cheaters are fixed so their
// scores visibly fall: user account 5 breaks the user's cases (1, 2, 5, 7), LP account 8 the LP's (3, 4, 6).
import type { Logger } from '../logging/logger.js';
import { playSwap, SWAP_KINDS, type DemoChains, type PlayedSwap, type SwapKind } from './cases.js';
import type { ComplaintRoute } from './complain.js';
import type { RelayRoute } from './relay-rescue.js';

export const DEMO_USERS = [4, 5, 6] as const;
export const DEMO_LPS = [2, 7, 8] as const;
export const CHEATING_USER = 5;
export const CHEATING_LP = 8;
const USER_CASES = new Set<SwapKind>(['1', '2', '5', '7']);
const LP_CASES = new Set<SwapKind>(['3', '4', '6']);

export type Mix = Record<SwapKind, number>;
// Enough honest swaps that the cheating LP keeps a tier (success rate ≥ 60 %) and its deductions show below it.
export const DEFAULT_MIX: Mix = { honest: 8, '1': 1, '2': 1, '3': 1, '4': 1, '5': 1, '6': 1, '7': 1 };

/** "honest=4,3=2,7=0": counts per kind; kinds not named keep their default. */
export function parseMix(text: string): Mix {
  const mix = { ...DEFAULT_MIX };
  for (const part of text.split(',').filter(Boolean)) {
    const [kind, count] = part.split('=');
    if (!SWAP_KINDS.includes(kind as SwapKind) || !/^\d+$/.test(count ?? ''))
      throw new Error(`--mix: "${part}" is not kind=count (kinds: ${SWAP_KINDS.join(', ')})`);
    mix[kind as SwapKind] = Number(count);
  }
  return mix;
}

export interface RoundResult {
  swaps: PlayedSwap[];
  /** Chain time both chains were moved to. */
  settledAt: number;
}

/** Plays one round: every kind `mix` times, interleaved, then both chains past every window. */
export async function playRound(
  round: number,
  mix: Mix,
  chains: DemoChains,
  route: ComplaintRoute & { relay?: RelayRoute & { chainId: number } },
  log: Logger,
): Promise<RoundResult> {
  const queue: SwapKind[] = [];
  const max = Math.max(...Object.values(mix));
  for (let i = 0; i < max; i++) for (const kind of SWAP_KINDS) if (i < mix[kind]) queue.push(kind);

  const swaps: PlayedSwap[] = [];
  for (const [i, kind] of queue.entries()) {
    const n = round * queue.length + i;
    const parties = {
      user: USER_CASES.has(kind) ? CHEATING_USER : LP_CASES.has(kind) ? pick([4, 6], n) : pick(DEMO_USERS, n),
      lp: LP_CASES.has(kind) ? CHEATING_LP : USER_CASES.has(kind) ? pick([2, 7], n) : honestLp(i),
    };
    const swap = await playSwap(kind, parties, 1 + (n % 9), chains, route);
    log.info(
      {
        kind,
        bidId: swap.bidId,
        user: swap.user,
        lpId: swap.lpId,
        complaint: swap.complaint,
        relayCommand: swap.relayCommand,
      },
      'swap played',
    );
    swaps.push(swap);
  }
  const settledAt = Math.max(...swaps.map((s) => s.settledAfter)) + 1;
  await moveTo(chains, settledAt);
  return { swaps, settledAt };
}

/** Both chains to at least `at`, then blocks enough to close the chain clients' 5-block chunk holding it. */
export async function moveTo(chains: DemoChains, at: number): Promise<void> {
  for (const chain of [chains.src, chains.dst]) {
    if ((await chain.latestTimestamp()) < at) await chain.setNextBlockTimestamp(at);
    await chain.mine(6);
  }
}

/** Five of every eight honest swaps go to the cheating LP: 5 normal to its 3 violations a round keeps it at 62 %. */
function honestLp(i: number): number {
  return i % 8 < 5 ? CHEATING_LP : pick([2, 7], i);
}

function pick<T>(from: readonly T[], n: number): T {
  return from[n % from.length]!;
}
