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

/**
 * An RPC's `eth_chainId` answer (a 0x hex quantity) against the configured EVM chain id: the text saying the
 * RPC serves another chain (both ids; never the URL, which may hold an API key: callers add a label), or
 * undefined when it serves the configured one. Our contracts often have the same address on every chain, so
 * an RPC of another chain gives that chain's events as if they were of the configured one.
 */
export function wrongChainText(answer: string, configured: number | bigint | string): string | undefined {
  const served = BigInt(answer);
  return served === BigInt(configured)
    ? undefined
    : `the RPC serves chain ${served}, not the configured ${configured}`;
}
