/** Validation of 20-byte EVM addresses given as text (not on the hot path: uses ethers). */
import { getAddress } from 'ethers';
import { ChainInputError } from './errors.js';

/**
 * Checksummed form of a 0x + 40 hex digit address. All-lowercase and all-uppercase are accepted
 * as is; mixed case must carry a valid EIP-55 checksum (a typo guard, as in ethers).
 */
export function parseEvmAddress(address: unknown, label = 'address'): string {
  if (typeof address !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(address)) {
    throw new ChainInputError('INVALID_ADDRESS', `${label} must be 0x followed by 40 hex digits`);
  }
  try {
    return getAddress(address);
  } catch (cause) {
    throw new ChainInputError('INVALID_ADDRESS', `${label} has an invalid EIP-55 checksum`, { cause });
  }
}
