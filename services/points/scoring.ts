/**
 * The score rules (spec §2.4, DESIGN §5.3–5.4) as pure integer arithmetic: scores are tenths of a point, never
 * floats. Everything here is a function of its inputs; the queries feed it counts read from the projections.
 */

export const SECONDS_PER_DAY = 86_400;
/** One violation costs 0.1 point. */
export const TENTHS_PER_VIOLATION = 1;
export const USER_BASIS_TENTHS = 20;
export const KYC_USER_BASIS_TENTHS = 50;

/**
 * The look-back window ending at `now`: a fact counts while `from < blockTime <= to`, i.e. it is at most
 * `windowDays` days old (a violation exactly `windowDays * 86400` seconds old no longer counts) and it has
 * happened by `now`.
 */
export interface Window {
  /** Exclusive lower bound: now − windowDays·86400. */
  from: number;
  /** Inclusive upper bound: now. */
  to: number;
  days: number;
}

export function windowEndingAt(now: number, windowDays: number): Window {
  return { from: now - windowDays * SECONDS_PER_DAY, to: now, days: windowDays };
}

export function inWindow(blockTime: number, window: Window): boolean {
  return blockTime > window.from && blockTime <= window.to;
}

export interface Score {
  basisTenths: number;
  deductedTenths: number;
  scoreTenths: number;
}

/** Basis minus the deductions, floored at 0. */
export function applyDeductions(basisTenths: number, violations: number): Score {
  const deductedTenths = violations * TENTHS_PER_VIOLATION;
  return { basisTenths, deductedTenths, scoreTenths: Math.max(0, basisTenths - deductedTenths) };
}

export function userBasisTenths(kycVerified: boolean): number {
  return kycVerified ? KYC_USER_BASIS_TENTHS : USER_BASIS_TENTHS;
}

/** One row of the LP tier table (spec §2.4). All three criteria must hold; the highest row wins. */
export interface Tier {
  basisTenths: number;
  /** Decided swaps in the window, at least ("≥ 1.2" is 2 in integers). */
  minSwaps: number;
  /** Success rate in whole percent, at least. */
  minSuccessPercent: number;
  /** Average response time strictly below this many seconds. */
  maxAverageSecondsExclusive: number;
}

export const LP_TIERS: readonly Tier[] = [
  { basisTenths: 50, minSwaps: 720, minSuccessPercent: 99, maxAverageSecondsExclusive: 60 },
  { basisTenths: 40, minSwaps: 150, minSuccessPercent: 95, maxAverageSecondsExclusive: 5 * 60 },
  { basisTenths: 30, minSwaps: 30, minSuccessPercent: 90, maxAverageSecondsExclusive: 15 * 60 },
  { basisTenths: 20, minSwaps: 6, minSuccessPercent: 80, maxAverageSecondsExclusive: 60 * 60 },
  { basisTenths: 10, minSwaps: 2, minSuccessPercent: 60, maxAverageSecondsExclusive: 24 * 60 * 60 },
];

/** An LP's swap statistics over the window. */
export interface LpStats {
  /** Swaps that count for the LP: normal swaps plus swaps the LP broke. */
  decidedSwaps: number;
  normalSwaps: number;
  /** Sum and count of the response times of normal swaps (a normal swap without one is not averaged). */
  responseSecondsSum: number;
  responseCount: number;
}

export interface TierCheck {
  tier: Tier;
  swaps: boolean;
  successRate: boolean;
  responseTime: boolean;
  met: boolean;
}

/** Each row's three criteria against `stats`, highest row first; integer comparisons only. */
export function checkTiers(stats: LpStats): TierCheck[] {
  return LP_TIERS.map((tier) => {
    const swaps = stats.decidedSwaps >= tier.minSwaps;
    // normal / decided >= p / 100  ⇔  normal·100 >= p·decided (decided > 0 is implied by swaps).
    const successRate =
      stats.decidedSwaps > 0 && stats.normalSwaps * 100 >= tier.minSuccessPercent * stats.decidedSwaps;
    // sum / count < limit  ⇔  sum < limit·count.
    const responseTime =
      stats.responseCount > 0 &&
      stats.responseSecondsSum < tier.maxAverageSecondsExclusive * stats.responseCount;
    return { tier, swaps, successRate, responseTime, met: swaps && successRate && responseTime };
  });
}

/** The basis of the highest row whose three criteria hold; 0 when none does. */
export function lpBasisTenths(stats: LpStats): { basisTenths: number; tier: Tier | null } {
  const met = checkTiers(stats).find((c) => c.met);
  return { basisTenths: met?.tier.basisTenths ?? 0, tier: met?.tier ?? null };
}

/** "1.9" for 19 tenths. */
export function formatTenths(tenths: number): string {
  return `${Math.trunc(tenths / 10)}.${tenths % 10}`;
}
