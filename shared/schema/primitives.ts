import { z } from 'zod';

// Building blocks for every boundary schema. Amounts are decimal-integer strings (never floats);
// times are unix seconds from block timestamps.

export const decimalString = z.string().regex(/^(0|[1-9]\d*)$/, 'must be a decimal-integer string');
export const hex32 = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'must be 32 bytes of 0x-prefixed hex')
  .transform((s) => s.toLowerCase());
export const hexBytes = z.string().regex(/^0x(?:[0-9a-fA-F]{2})*$/, 'must be 0x-prefixed hex bytes');
export const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 20-byte 0x-prefixed hex address');
export const unixSeconds = z.number().int().nonnegative();
/** Otmoic's BIP-44 style system chain id (60 ETH, 9006 BSC, 614 OP …) as a decimal string. */
export const systemChainId = decimalString;
export const txHash = hex32;
