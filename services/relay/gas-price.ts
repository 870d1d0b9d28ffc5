/**
 * The gas strategy of a behalf command (`gas.gas_price`): a named level priced from the chain's
 * eth_gasPrice at sending time, or an exact wei amount. The relay pays, so `relay.maxGasPriceWei` caps both.
 */
import { RelayError } from './errors.js';

export const GAS_LEVELS = ['FAST', 'STANDARD', 'SAFELOW'] as const;
export type GasLevel = (typeof GAS_LEVELS)[number];
export type GasPrice = GasLevel | string;

/** Percent of eth_gasPrice paid per level: SAFELOW the node's own price, STANDARD +10 %, FAST +25 %. */
export const GAS_LEVEL_PERCENT: Record<GasLevel, bigint> = { SAFELOW: 100n, STANDARD: 110n, FAST: 125n };

const WEI = /^[1-9][0-9]{0,30}$/;

/** Validates the body's gas_price; RelayError UNSUPPORTED_GAS_PRICE names the allowed values. */
export function parseGasPrice(input: unknown, maxWei?: bigint): GasPrice {
  if (typeof input === 'string' && (GAS_LEVELS as readonly string[]).includes(input)) return input;
  if (typeof input === 'string' && WEI.test(input)) {
    if (maxWei !== undefined && BigInt(input) > maxWei) {
      throw new RelayError(
        'UNSUPPORTED_GAS_PRICE',
        `gas.gas_price ${input} wei is above this relay's maximum of ${maxWei} wei`,
      );
    }
    return input;
  }
  throw new RelayError(
    'UNSUPPORTED_GAS_PRICE',
    `gas.gas_price must be ${GAS_LEVELS.join(', ')} or a positive decimal wei amount`,
  );
}

/** The wei per gas to pay: levels scale the node's price (capped at maxWei); wei amounts are paid as given. */
export function resolveGasPrice(strategy: GasPrice, nodeGasPrice: bigint, maxWei?: bigint): bigint {
  if (!(GAS_LEVELS as readonly string[]).includes(strategy)) return BigInt(strategy);
  const scaled = (nodeGasPrice * GAS_LEVEL_PERCENT[strategy as GasLevel]) / 100n;
  return maxWei !== undefined && scaled > maxWei ? maxWei : scaled;
}
