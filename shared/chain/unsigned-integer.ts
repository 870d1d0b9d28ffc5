/**
 * Unsigned integers as they arrive in JSON: a JSON integer or a decimal-integer string, as bigint.
 *
 * Stricter than ethers on purpose: no hex strings ("0x3c" is junk in these APIs), no floats,
 * no negatives, no JSON numbers past 2^53-1 (they were already rounded by JSON.parse).
 */
import { z } from 'zod';
import { ChainInputError } from './errors.js';

export type UintBits = 64 | 256;

const DECIMAL_DIGITS = /^[0-9]+$/;
// 2^256 has 78 digits; leading zeros are harmless, but an unbounded string would make BigInt() slow.
const MAX_DECIMAL_LENGTH = 100;

/** The bigint value, or a message saying why the input is not an unsigned integer of that size. */
export function toUnsignedInteger(input: unknown, bits: UintBits): bigint | { error: string } {
  let value: bigint;
  if (input === undefined || input === null) {
    return { error: 'is required' };
  } else if (typeof input === 'bigint') {
    value = input;
  } else if (typeof input === 'number') {
    if (!Number.isInteger(input)) return { error: `must be an integer, got ${input}` };
    if (!Number.isSafeInteger(input)) {
      return { error: 'is a JSON number above 2^53-1, which loses precision: send it as a decimal string' };
    }
    value = BigInt(input);
  } else if (typeof input === 'string') {
    if (!DECIMAL_DIGITS.test(input) || input.length > MAX_DECIMAL_LENGTH) {
      return { error: `must be a decimal integer string, got ${JSON.stringify(input.slice(0, 80))}` };
    }
    value = BigInt(input);
  } else {
    return { error: 'must be an integer or a decimal integer string' };
  }
  if (value < 0n) return { error: 'must not be negative' };
  if (value >> BigInt(bits) !== 0n) return { error: `must be below 2^${bits}` };
  return value;
}

/** zod field: JSON integer or decimal string (or bigint) -> bigint in [0, 2^bits). */
export function unsignedIntegerField(bits: UintBits) {
  return z.unknown().transform((input, ctx): bigint => {
    const result = toUnsignedInteger(input, bits);
    if (typeof result === 'bigint') return result;
    ctx.addIssue({ code: 'custom', message: result.error });
    return z.NEVER;
  });
}

/** Throwing form, for single values such as a chain id. */
export function parseUnsignedInteger(input: unknown, bits: UintBits, label: string): bigint {
  const result = toUnsignedInteger(input, bits);
  if (typeof result === 'bigint') return result;
  throw new ChainInputError('INVALID_NUMBER', `${label} ${result.error}`);
}
