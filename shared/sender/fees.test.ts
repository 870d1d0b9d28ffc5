import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bumpedFee, cappedFee, feePerGas, initialFee, maxCost, perGasWithin, type Fee } from './fees.js';
import { classifyBroadcastError } from './broadcast-errors.js';

const wei = fc.bigInt({ min: 1n, max: 10n ** 13n });

describe('sender fees', () => {
  it('EIP-1559 where blocks carry a base fee, legacy otherwise; never above the cap', () => {
    fc.assert(
      fc.property(wei, wei, wei, fc.constantFrom(100n, 110n, 125n), (base, tip, cap, percent) => {
        const fee = initialFee(
          { baseFeePerGas: base, priorityFeePerGas: tip, gasPrice: base + tip },
          { percent },
          cap,
        );
        expect(fee.type).toBe(2);
        if (fee.type !== 2) return;
        expect(fee.maxFeePerGas).toBeLessThanOrEqual(cap);
        expect(fee.maxPriorityFeePerGas).toBeLessThanOrEqual(fee.maxFeePerGas);
        const legacy = initialFee(
          { baseFeePerGas: null, priorityFeePerGas: tip, gasPrice: tip },
          { percent },
          cap,
        );
        expect(legacy.type).toBe(0);
        if (legacy.type === 0) expect(legacy.gasPrice).toBeLessThanOrEqual(cap);
      }),
    );
    expect(
      initialFee({ baseFeePerGas: 10n, priorityFeePerGas: 2n, gasPrice: 12n }, { weiPerGas: 50n }, 1_000n),
    ).toEqual({ type: 2, maxFeePerGas: 50n, maxPriorityFeePerGas: 2n });
  });

  it("a wei amount is a ceiling on a legacy chain too: at most the node's price + 25 %, or less when asked", () => {
    const gwei = 10n ** 9n;
    const market = { baseFeePerGas: null, priorityFeePerGas: gwei, gasPrice: gwei };
    // Asked at the relay's maxGasPriceWei (200 gwei) on a chain at 1 gwei: paid as FAST, not 200 times over.
    expect(initialFee(market, { weiPerGas: 200n * gwei }, 200n * gwei)).toEqual({
      type: 0,
      gasPrice: (gwei * 125n) / 100n,
    });
    expect(initialFee(market, { weiPerGas: gwei / 2n }, 200n * gwei)).toEqual({
      type: 0,
      gasPrice: gwei / 2n,
    });
    // Never above what was asked, the node's price + 25 %, or the cap (a fee is at least 1 wei).
    fc.assert(
      fc.property(wei, wei, wei, (asked, price, cap) => {
        const legacy = { baseFeePerGas: null, priorityFeePerGas: price, gasPrice: price };
        const fee = initialFee(legacy, { weiPerGas: asked }, cap);
        if (fee.type !== 0) throw new Error('a legacy chain takes a gas price');
        for (const bound of [asked, (price * 125n) / 100n, cap])
          expect(fee.gasPrice).toBeLessThanOrEqual(bound > 1n ? bound : 1n);
      }),
    );
  });

  it('a fee capped to what a budget pays over a gas limit never costs more than the budget, nor offers more than asked', () => {
    const fee = fc.oneof(
      fc.tuple(wei, wei).map(([a, b]): Fee => ({
        type: 2,
        maxFeePerGas: a > b ? a : b,
        maxPriorityFeePerGas: a > b ? b : a,
      })),
      wei.map((g): Fee => ({ type: 0, gasPrice: g })),
    );
    const budget = fc.bigInt({ min: -(10n ** 18n), max: 10n ** 18n });
    const gasLimit = fc.bigInt({ min: 21_000n, max: 30_000_000n });
    fc.assert(
      fc.property(fee, budget, gasLimit, (asked, budget, gasLimit) => {
        const capped = cappedFee(asked, perGasWithin(budget, gasLimit));
        expect(maxCost(capped, gasLimit)).toBeLessThanOrEqual(budget > 0n ? budget : 0n);
        expect(feePerGas(capped)).toBeLessThanOrEqual(feePerGas(asked));
        if (capped.type === 2) expect(capped.maxPriorityFeePerGas).toBeLessThanOrEqual(capped.maxFeePerGas);
        // The highest such fee: one wei more per gas would not fit (unless nothing was cut).
        if (feePerGas(capped) < feePerGas(asked))
          expect(maxCost(capped, gasLimit) + gasLimit).toBeGreaterThan(budget);
      }),
    );
  });

  it('a replacement raises both fee fields by at least 10 % (node rule), within the cap, or is not made', () => {
    const fee = fc.oneof(
      fc.tuple(wei, wei).map(([a, b]): Fee => ({
        type: 2,
        maxFeePerGas: a > b ? a : b,
        maxPriorityFeePerGas: a > b ? b : a,
      })),
      wei.map((g): Fee => ({ type: 0, gasPrice: g })),
    );
    fc.assert(
      fc.property(fee, fee, wei, (previous, fresh, cap) => {
        const next = bumpedFee(previous, fresh, cap);
        const fields = (f: Fee) => (f.type === 0 ? [f.gasPrice] : [f.maxFeePerGas, f.maxPriorityFeePerGas]);
        if (next === undefined) {
          // Only the cap can stop a bump.
          const top = previous.type === 0 ? previous.gasPrice : previous.maxFeePerGas;
          expect(top * 110n).toBeGreaterThan(cap * 100n);
          return;
        }
        expect(next.type).toBe(previous.type);
        fields(next).forEach((value, i) => {
          expect(value * 100n).toBeGreaterThanOrEqual(fields(previous)[i]! * 110n);
          expect(value).toBeLessThanOrEqual(cap);
        });
      }),
    );
  });

  it('classifies node refusals', () => {
    expect(classifyBroadcastError('already known')).toBe('known');
    expect(classifyBroadcastError('nonce too low')).toBe('known');
    expect(classifyBroadcastError('replacement transaction underpriced')).toBe('underpriced');
    // Erigon's and Nethermind's words for the same answers.
    expect(classifyBroadcastError('INTERNAL_ERROR: existing tx with same hash')).toBe('known');
    expect(classifyBroadcastError('AlreadyKnown')).toBe('known');
    expect(classifyBroadcastError('OldNonce')).toBe('known');
    expect(classifyBroadcastError('INTERNAL_ERROR: could not replace existing tx')).toBe('underpriced');
    expect(classifyBroadcastError('FeeTooLowToCompete')).toBe('underpriced');
    expect(classifyBroadcastError('NonceGap')).toBe('transient');
    expect(classifyBroadcastError('Nonce too high. Expected nonce to be 3 but got 4')).toBe('transient');
    // The sender decides what an unaffordable transaction means (a node seeing another balance is a refusal).
    expect(classifyBroadcastError('insufficient funds for gas * price + value')).toBe('unfunded');
    expect(classifyBroadcastError('transaction would cause overdraft')).toBe('unfunded');
    expect(classifyBroadcastError('RPC call timed out after 100 ms')).toBe('transient');
    expect(classifyBroadcastError('transaction rejected by policy')).toBe('refused');
    expect(classifyBroadcastError('tx fee (2.00 ether) exceeds the configured cap (1.00 ether)')).toBe(
      'refused',
    );
    // An endpoint's limits are not the node refusing the transaction: never a step toward cancelling it.
    for (const limit of [
      'project ID request rate exceeded',
      'Your app has exceeded its compute units per second capacity',
      'Too Many Requests',
      'header not found',
      'server busy, try again later',
    ])
      expect(classifyBroadcastError(limit), limit).toBe('transient');
    expect(
      classifyBroadcastError(
        'max fee per gas less than block base fee: address 0x1, maxFeePerGas: 1, baseFee: 7',
      ),
    ).toBe('underpriced');
  });
});
