/**
 * The JSON answers of the Points queries, built from figures by pure functions: every score comes with what
 * it was computed from, so it can be checked by hand from the answer and the deduction records.
 */
import type { SwapVerdict } from '../../topics/swap.verdicts.js';
import type { ComplaintRow } from './projection.js';
import { encodeCursor } from './query-params.js';
import {
  applyDeductions,
  checkTiers,
  formatTenths,
  inWindow,
  lpBasisTenths,
  TENTHS_PER_VIOLATION,
  userBasisTenths,
  type LpStats,
  type Window,
} from './scoring.js';
import type { DeductionRecord, LpFigures } from './store.js';

export interface LookupFlag {
  stale: boolean;
  fetched_at: number | null;
}

export function windowAnswer(window: Window) {
  return {
    days: window.days,
    from_exclusive: window.from,
    to_inclusive: window.to,
    rule: 'a violation or swap counts when from_exclusive < block_time <= to_inclusive',
  };
}

function scoreFields(scoreTenths: number) {
  return { score: formatTenths(scoreTenths), score_tenths: scoreTenths };
}

function deductionsAnswer(violations: number) {
  const tenths = violations * TENTHS_PER_VIOLATION;
  return { violations, tenths, points: formatTenths(tenths), per_violation_tenths: TENTHS_PER_VIOLATION };
}

export function userPointAnswer(input: {
  address: string;
  at: number;
  explicitAt: boolean;
  window: Window;
  violations: number;
  kyc: { verified: boolean | undefined } & LookupFlag;
  did: { names: string[] | undefined } & LookupFlag;
  /** The DID name the address was resolved from (did=), or null when the address was given. */
  resolvedFrom: ({ name: string } & LookupFlag) | null;
}) {
  const verified = input.kyc.verified === true;
  const score = applyDeductions(userBasisTenths(verified), input.violations);
  const basisReason =
    input.kyc.verified === undefined
      ? 'KYC status unknown (the relay admin service has not answered for this address): basis 2'
      : verified
        ? 'KYC-verified: basis 5'
        : 'not KYC-verified: basis 2';
  return {
    subject: {
      kind: 'user',
      address: input.address,
      did_names: input.did.names ?? [],
      resolved_from_did: input.resolvedFrom,
    },
    at: input.at,
    at_source: input.explicitAt ? 'query' : 'now',
    ...scoreFields(score.scoreTenths),
    basis: { tenths: score.basisTenths, points: formatTenths(score.basisTenths), reason: basisReason },
    deductions: deductionsAnswer(input.violations),
    floored_at_zero: score.basisTenths - score.deductedTenths < 0,
    window: windowAnswer(input.window),
    kyc: {
      verified,
      known: input.kyc.verified !== undefined,
      stale: input.kyc.stale,
      fetched_at: input.kyc.fetched_at,
      note: 'the current KYC status (its history is not kept), also for a past `at`',
    },
    // Stale when any DID answer it rests on is: the address's names, or the owner of the name asked for.
    did: {
      names: input.did.names ?? [],
      stale: input.did.stale || input.resolvedFrom?.stale === true,
      fetched_at: input.did.fetched_at,
    },
    records: `/user-deduction-records?address=${input.address}${input.explicitAt ? `&at=${input.at}` : ''}`,
  };
}

/** "95.2" for 952 per mille: rates and averages shown with one decimal, computed in integers (truncated). */
function tenthsOf(numerator: number, denominator: number, scale: number): string | null {
  if (denominator === 0) return null;
  return formatTenths(Math.floor((numerator * scale * 10) / denominator));
}

export function lpStatsAnswer(stats: LpStats) {
  return {
    decided_swaps: stats.decidedSwaps,
    normal_swaps: stats.normalSwaps,
    success_rate_percent: tenthsOf(stats.normalSwaps, stats.decidedSwaps, 100),
    average_response_seconds: tenthsOf(stats.responseSecondsSum, stats.responseCount, 1),
    response_time_sum_seconds: stats.responseSecondsSum,
    response_time_samples: stats.responseCount,
  };
}

export function tierAnswers(stats: LpStats) {
  return checkTiers(stats).map((c) => ({
    basis: formatTenths(c.tier.basisTenths),
    basis_tenths: c.tier.basisTenths,
    met: c.met,
    criteria: {
      swaps: { required: `>= ${c.tier.minSwaps}`, actual: stats.decidedSwaps, met: c.swaps },
      success_rate: {
        required: `>= ${c.tier.minSuccessPercent} %`,
        actual: tenthsOf(stats.normalSwaps, stats.decidedSwaps, 100),
        met: c.successRate,
      },
      average_response_time: {
        required: `< ${c.tier.maxAverageSecondsExclusive} s`,
        actual: tenthsOf(stats.responseSecondsSum, stats.responseCount, 1),
        met: c.responseTime,
      },
    },
  }));
}

export function lpScoreTenths(figures: LpFigures): number {
  return applyDeductions(lpBasisTenths(figures).basisTenths, figures.violations).scoreTenths;
}

export function lpPointAnswer(input: {
  lpId: string;
  at: number;
  explicitAt: boolean;
  window: Window;
  figures: LpFigures;
}) {
  const { basisTenths, tier } = lpBasisTenths(input.figures);
  const score = applyDeductions(basisTenths, input.figures.violations);
  return {
    subject: { kind: 'lp', lp_id: input.lpId },
    at: input.at,
    at_source: input.explicitAt ? 'query' : 'now',
    ...scoreFields(score.scoreTenths),
    basis: {
      tenths: basisTenths,
      points: formatTenths(basisTenths),
      reason: tier
        ? `tier row of basis ${formatTenths(tier.basisTenths)}: ${tier.minSwaps} or more swaps, success rate >= ${tier.minSuccessPercent} %, average response time < ${tier.maxAverageSecondsExclusive} s`
        : 'no tier row has all three criteria met: basis 0',
    },
    statistics: lpStatsAnswer(input.figures),
    tiers: tierAnswers(input.figures),
    deductions: deductionsAnswer(input.figures.violations),
    floored_at_zero: score.basisTenths - score.deductedTenths < 0,
    window: windowAnswer(input.window),
    records: `/lp-deduction-records?lp_id=${encodeURIComponent(input.lpId)}${input.explicitAt ? `&at=${input.at}` : ''}`,
  };
}

export function deductionRecordAnswer(record: DeductionRecord, window: Window) {
  return {
    bid: record.bidId,
    case: record.case,
    party: record.party,
    subject: record.subject,
    rule: record.rule,
    tenths: record.tenths,
    points: formatTenths(record.tenths),
    block_time: record.blockTime,
    decided_on_chain: record.chainId,
    chains: { source: record.srcChainId, destination: record.dstChainId },
    transactions: record.transactions.map((t) => ({
      step: t.step,
      chain_id: t.chainId,
      tx_hash: t.txHash,
      block_time: t.blockTime,
    })),
    counts: inWindow(record.blockTime, window),
  };
}

export function recordsAnswer(input: {
  records: DeductionRecord[];
  limit: number;
  window: Window;
  at: number;
}) {
  const last = input.records[input.records.length - 1];
  return {
    at: input.at,
    window: windowAnswer(input.window),
    records: input.records.map((r) => deductionRecordAnswer(r, input.window)),
    next_cursor:
      input.records.length === input.limit && last
        ? encodeCursor({ blockTime: last.blockTime, bidId: last.bidId })
        : null,
  };
}

const asInteger = (text: string | undefined): bigint | null =>
  text !== undefined && /^\d+$/.test(text) ? BigInt(text) : null;
const plain = (n: bigint): number | string =>
  n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();

/** What a complaint without a verdict waits for: the windows of its own agreement (DESIGN §7). */
export function pendingAnswer(complaint: ComplaintRow) {
  const f = complaint.fields;
  const t = asInteger(f['agreementReachedTime']);
  const e = asInteger(f['expectedSingleStepTime']);
  const tol = asInteger(f['tolerantSingleStepTime']);
  const src = f['srcChainId'] ?? null;
  const dst = f['dstChainId'] ?? null;
  const deadlines =
    t === null || e === null || tol === null
      ? []
      : [
          { step: 'transferOut', chain_id: src, by_block_time: plain(t + e), else: 'case 1 (user)' },
          { step: 'transferIn', chain_id: dst, by_block_time: plain(t + 2n * e), else: 'case 3 (LP)' },
          { step: 'confirmOut', chain_id: src, by_block_time: plain(t + 3n * e), else: 'case 5 (user)' },
          { step: 'confirmIn', chain_id: dst, by_block_time: plain(t + 3n * e + tol), else: 'case 6 (LP)' },
        ];
  return {
    waits_for:
      "the classifier's verdict: it decides once the windows below have closed on the deciding chain's block time (a signature or complainant problem, case 0, is decided at once)",
    deadlines,
  };
}

export function complaintAnswer(bidId: string, complaints: ComplaintRow[], verdict: SwapVerdict | null) {
  const seen = complaints.map((c) => ({
    chain_id: c.chainId,
    tx_hash: c.txHash,
    block_number: c.blockNumber,
    block_time: c.blockTime,
    complainant: c.complainant,
    fields: c.fields,
  }));
  const status = verdict ? 'decided' : 'pending';
  return {
    bid: bidId,
    status,
    complaint:
      verdict?.complaint ?? (seen[0] ? { complainant: seen[0].complainant, fields: seen[0].fields } : null),
    complaints_on_chain: seen,
    verdict: verdict
      ? {
          outcome: verdict.outcome,
          case: verdict.case,
          party: verdict.party,
          subject: verdict.subject,
          rule: verdict.rule,
          block_time: verdict.blockTime,
          decided_on_chain: verdict.decidedOn,
          user: verdict.user,
          lp_id: verdict.lpId,
          transactions: verdict.transactions.map((t) => ({
            step: t.step,
            chain_id: t.chainId,
            tx_hash: t.txHash,
            block_time: t.blockTime,
          })),
        }
      : null,
    evidence: verdict?.evidence ?? null,
    pending: verdict || !complaints[0] ? null : pendingAnswer(complaints[0]),
  };
}
