/** EVM chain ids (EIP-155) as used in EIP-712 domains: a positive integer, kept as bigint. */
import { ChainInputError } from './errors.js';
import { toUnsignedInteger } from './unsigned-integer.js';

export type ChainIdInput = number | bigint | string;

export function parseChainId(chainId: ChainIdInput): bigint {
  const result = toUnsignedInteger(chainId, 256);
  if (typeof result !== 'bigint') throw new ChainInputError('INVALID_CHAIN_ID', `chainId ${result.error}`);
  if (result === 0n) throw new ChainInputError('INVALID_CHAIN_ID', 'chainId must be positive');
  return result;
}
