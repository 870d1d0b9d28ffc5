/**
 * Transaction fees: EIP-1559 (type 2) where the chain's blocks carry a base fee, legacy (type 0) otherwise;
 * a cap on the fee per gas; and the speed-up rule for a replacement at the same nonce (nodes refuse one
 * that does not raise both fee fields by at least 10 %: we raise by 12.5 %, or to the market, whichever is
 * higher). All amounts are bigint wei.
 */

export type Fee =
  { type: 2; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { type: 0; gasPrice: bigint };

/** How a command wants to pay: a percentage of the market's price, or a fixed wei amount per gas. */
export type FeeStrategy = { percent: bigint } | { weiPerGas: bigint };

/** What the chain asks now: the next block's base fee (null on a legacy chain) and a tip / gas price. */
export interface Market {
  baseFeePerGas: bigint | null;
  /** eth_maxPriorityFeePerGas (1559) or eth_gasPrice (legacy). */
  priorityFeePerGas: bigint;
  gasPrice: bigint;
}

/** Replacement bump applied by the sender: 12.5 % (nodes want ≥ 10 %). */
const BUMP_NUM = 1125n;
const BUMP_DEN = 1000n;
const MIN_NUM = 110n;
const MIN_DEN = 100n;

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;
const min = (a: bigint, b: bigint) => (a < b ? a : b);
const max = (a: bigint, b: bigint) => (a > b ? a : b);

/**
 * On a legacy chain, a wei amount is paid up to this percent of the node's gas price (the relay's FAST level).
 * On an EIP-1559 chain a wei amount is a maxFeePerGas, a ceiling: the block's base fee and the market's tip are
 * paid. On a legacy chain the gas price is paid whole, so a client's amount, at most relay.maxGasPriceWei (200
 * gwei by default, some 100 times BSC's price), let anyone who posts a swap's command first (its terms are public)
 * make the wallet pay that for it. A ceiling there too.
 */
export const LEGACY_WEI_CEILING_PERCENT = 125n;

/** The fee of a first transaction: the market scaled by the strategy, never above `cap`. */
export function initialFee(market: Market, strategy: FeeStrategy, cap: bigint): Fee {
  if (market.baseFeePerGas === null) {
    const price =
      'weiPerGas' in strategy
        ? min(strategy.weiPerGas, (market.gasPrice * LEGACY_WEI_CEILING_PERCENT) / 100n)
        : (market.gasPrice * strategy.percent) / 100n;
    return { type: 0, gasPrice: min(max(price, 1n), cap) };
  }
  if ('weiPerGas' in strategy) {
    const maxFee = min(strategy.weiPerGas, cap);
    return { type: 2, maxFeePerGas: maxFee, maxPriorityFeePerGas: min(market.priorityFeePerGas, maxFee) };
  }
  const tip = max((market.priorityFeePerGas * strategy.percent) / 100n, 1n);
  // Two base fees of room: the base fee can rise 12.5 % per full block.
  const maxFee = min(market.baseFeePerGas * 2n + tip, cap);
  return { type: 2, maxFeePerGas: maxFee, maxPriorityFeePerGas: min(tip, maxFee) };
}

/**
 * The fee of a replacement of `previous` at the same nonce: +12.5 % on every field or the fresh market
 * fee, whichever is higher, capped. Undefined when the cap leaves less than the +10 % a node requires
 * (then nothing can replace it, and the sender waits).
 */
export function bumpedFee(previous: Fee, fresh: Fee, cap: bigint): Fee | undefined {
  const raise = (old: bigint, market: bigint) => max(ceilDiv(old * BUMP_NUM, BUMP_DEN), market);
  const enough = (old: bigint, next: bigint) => next >= ceilDiv(old * MIN_NUM, MIN_DEN);
  if (previous.type === 0) {
    const freshPrice = fresh.type === 0 ? fresh.gasPrice : fresh.maxFeePerGas;
    const gasPrice = min(raise(previous.gasPrice, freshPrice), cap);
    return enough(previous.gasPrice, gasPrice) ? { type: 0, gasPrice } : undefined;
  }
  const freshMax = fresh.type === 2 ? fresh.maxFeePerGas : fresh.gasPrice;
  const freshTip = fresh.type === 2 ? fresh.maxPriorityFeePerGas : fresh.gasPrice;
  const maxFeePerGas = min(raise(previous.maxFeePerGas, freshMax), cap);
  const maxPriorityFeePerGas = min(raise(previous.maxPriorityFeePerGas, freshTip), maxFeePerGas);
  if (!enough(previous.maxFeePerGas, maxFeePerGas)) return undefined;
  if (!enough(previous.maxPriorityFeePerGas, maxPriorityFeePerGas)) return undefined;
  return { type: 2, maxFeePerGas, maxPriorityFeePerGas };
}

/** The strategy of the market's own fee (`initialFee` at 100 %): what a transaction needs to be mined now. */
export const MARKET: FeeStrategy = { percent: 100n };

/** The most a fee pays per gas: maxFeePerGas, or gasPrice on a legacy chain. */
export function feePerGas(fee: Fee): bigint {
  return fee.type === 0 ? fee.gasPrice : fee.maxFeePerGas;
}

/** The most a transaction with this fee and gas limit can cost. */
export function maxCost(fee: Fee, gasLimit: bigint): bigint {
  return feePerGas(fee) * gasLimit;
}

/** Wei per gas a transaction with `gasLimit` may offer so that its gas costs at most `budget` (0 when none). */
export function perGasWithin(budget: bigint, gasLimit: bigint): bigint {
  return budget > 0n ? budget / gasLimit : 0n;
}

/** `fee` lowered to at most `cap` per gas on every field (the tip never above the max fee). */
export function cappedFee(fee: Fee, cap: bigint): Fee {
  if (fee.type === 0) return { type: 0, gasPrice: min(fee.gasPrice, cap) };
  const maxFeePerGas = min(fee.maxFeePerGas, cap);
  return { type: 2, maxFeePerGas, maxPriorityFeePerGas: min(fee.maxPriorityFeePerGas, maxFeePerGas) };
}

/** JSON form (decimal strings) for storage. */
export type StoredFee =
  { type: 2; maxFeePerGas: string; maxPriorityFeePerGas: string } | { type: 0; gasPrice: string };

export function storeFee(fee: Fee): StoredFee {
  return fee.type === 0
    ? { type: 0, gasPrice: fee.gasPrice.toString() }
    : {
        type: 2,
        maxFeePerGas: fee.maxFeePerGas.toString(),
        maxPriorityFeePerGas: fee.maxPriorityFeePerGas.toString(),
      };
}

export function loadFee(fee: StoredFee): Fee {
  return fee.type === 0
    ? { type: 0, gasPrice: BigInt(fee.gasPrice) }
    : {
        type: 2,
        maxFeePerGas: BigInt(fee.maxFeePerGas),
        maxPriorityFeePerGas: BigInt(fee.maxPriorityFeePerGas),
      };
}
