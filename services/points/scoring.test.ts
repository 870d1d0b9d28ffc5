import { describe, expect, it } from 'vitest';
import {
  formatTenths,
  inWindow,
  lpBasisTenths,
  applyDeductions,
  windowEndingAt,
  type LpStats,
} from './scoring.js';

// The tier table as the specification prints it (§2.4), written out again so a typo in LP_TIERS fails here.
const SPEC_ROWS = [
  { basis: 50, swaps: 720, percent: 99, below: 60 },
  { basis: 40, swaps: 150, percent: 95, below: 300 },
  { basis: 30, swaps: 30, percent: 90, below: 900 },
  { basis: 20, swaps: 6, percent: 80, below: 3_600 },
  { basis: 10, swaps: 2, percent: 60, below: 86_400 },
];

/** Exactly at every boundary: `swaps` swaps, the fewest normal ones that reach the rate, average just below. */
function atBoundary(row: (typeof SPEC_ROWS)[number]): LpStats {
  const normal = Math.ceil((row.percent * row.swaps) / 100);
  return {
    decidedSwaps: row.swaps,
    normalSwaps: normal,
    responseSecondsSum: row.below * normal - 1,
    responseCount: normal,
  };
}

describe('LP tiers at every boundary, on both sides', () => {
  for (const row of SPEC_ROWS) {
    it(`row ${row.basis / 10}: ${row.swaps} swaps, ${row.percent} %, < ${row.below} s`, () => {
      const exact = atBoundary(row);
      expect(lpBasisTenths(exact).basisTenths).toBe(row.basis);
      // One swap fewer (keeping the rate): below this row.
      const fewer = {
        ...exact,
        decidedSwaps: row.swaps - 1,
        normalSwaps: Math.min(exact.normalSwaps, row.swaps - 1),
      };
      expect(lpBasisTenths(fewer).basisTenths).toBeLessThan(row.basis);
      // One normal swap fewer: the rate drops under the row's percentage.
      const worseRate = {
        ...exact,
        normalSwaps: exact.normalSwaps - 1,
        responseCount: exact.responseCount - 1,
        responseSecondsSum: row.below * (exact.normalSwaps - 1) - 1,
      };
      expect(lpBasisTenths(worseRate).basisTenths).toBeLessThan(row.basis);
      // Average exactly at the limit (sum = limit × count): "< limit" fails.
      const slow = { ...exact, responseSecondsSum: row.below * exact.responseCount };
      expect(lpBasisTenths(slow).basisTenths).toBeLessThan(row.basis);
    });
  }

  it('needs all three criteria of a row, and gives 0 when no row holds', () => {
    expect(
      lpBasisTenths({ decidedSwaps: 1, normalSwaps: 1, responseSecondsSum: 1, responseCount: 1 }).basisTenths,
    ).toBe(0);
    // 10,000 perfect swaps but a 24 h average: nothing.
    expect(
      lpBasisTenths({
        decidedSwaps: 10_000,
        normalSwaps: 10_000,
        responseSecondsSum: 86_400 * 10_000,
        responseCount: 10_000,
      }).basisTenths,
    ).toBe(0);
    // Many swaps and fast, but only 95 %: the 150-row.
    expect(
      lpBasisTenths({ decidedSwaps: 1_000, normalSwaps: 950, responseSecondsSum: 950, responseCount: 950 })
        .basisTenths,
    ).toBe(40);
    expect(
      lpBasisTenths({ decidedSwaps: 0, normalSwaps: 0, responseSecondsSum: 0, responseCount: 0 }).basisTenths,
    ).toBe(0);
  });
});

describe('window, floor and display', () => {
  it('counts block times in (now − days·86400, now]', () => {
    const w = windowEndingAt(1_000_000, 1);
    expect([w.from, w.to]).toEqual([1_000_000 - 86_400, 1_000_000]);
    expect(inWindow(w.from, w)).toBe(false);
    expect(inWindow(w.from + 1, w)).toBe(true);
    expect(inWindow(w.to, w)).toBe(true);
    expect(inWindow(w.to + 1, w)).toBe(false);
  });
  it('floors at 0 and shows tenths with one decimal', () => {
    expect(applyDeductions(20, 25)).toEqual({ basisTenths: 20, deductedTenths: 25, scoreTenths: 0 });
    expect(applyDeductions(20, 1).scoreTenths).toBe(19);
    expect([0, 1, 19, 50].map(formatTenths)).toEqual(['0.0', '0.1', '1.9', '5.0']);
  });
});
