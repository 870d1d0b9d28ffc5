import { describe, expect, it } from 'vitest';
import { RelayError } from './errors.js';
import { parseGasPrice, resolveGasPrice } from './gas-price.js';

describe('gas strategy', () => {
  it('prices the named levels from the node price and pays a wei amount as given', () => {
    expect(resolveGasPrice('SAFELOW', 1_000n)).toBe(1_000n);
    expect(resolveGasPrice('STANDARD', 1_000n)).toBe(1_100n);
    expect(resolveGasPrice('FAST', 1_000n)).toBe(1_250n);
    expect(resolveGasPrice('7', 1_000n)).toBe(7n);
  });
  it('clamps a level to relay.maxGasPriceWei and refuses a wei amount above it', () => {
    expect(resolveGasPrice('FAST', 1_000n, 1_200n)).toBe(1_200n);
    expect(parseGasPrice('1200', 1_200n)).toBe('1200');
    expect(() => parseGasPrice('1201', 1_200n)).toThrow(RelayError);
    expect(() => parseGasPrice('1201', 1_200n)).toThrow(/above this relay's maximum of 1200 wei/);
  });
  it('refuses anything else, naming the allowed values', () => {
    for (const bad of ['fast', 'TURBO', '0', '01', '1.5', '-3', '', 5, null, {}]) {
      expect(() => parseGasPrice(bad)).toThrow(
        'gas.gas_price must be FAST, STANDARD, SAFELOW or a positive decimal wei amount',
      );
    }
  });
});
