/**
 * Consent from signatures (DESIGN §7): who signed an agreement under the OtmoicSwap domain of a chain. Pure
 * crypto, no I/O. A signature that is malformed or recovers nobody proves nothing (null), never an error.
 */
import { recoverSwapSigner } from '../../shared/chain/otmoic-swap-eip712.js';
import { ADDRESS_RENDERINGS, swapMessage, type Agreement } from '../../shared/otmoic/agreement.js';

/**
 * Addresses the signature recovers to, one per rendering of the address members (checksummed first), without
 * duplicates, computed as they are asked for (a caller that stops at the first pays one recovery). Exactly one
 * of them is the real signer when the signature is genuine.
 */
export function* candidateSigners(
  agreement: Agreement,
  signature: string,
  evmChainId: number,
): Generator<string, void, undefined> {
  const found: string[] = [];
  for (const rendering of ADDRESS_RENDERINGS) {
    const signer = recoverCached(swapMessage(agreement, rendering), signature, evmChainId);
    if (signer === null) return; // malformed signature: the same under every rendering
    if (found.includes(signer)) continue;
    found.push(signer);
    yield signer;
  }
}

/** userSign under OtmoicSwap{source chain} recovers `requestor` (compared case-insensitively). */
export function userConsents(agreement: Agreement, userSign: string, srcEvmChainId: number): boolean {
  const requestor = agreement.requestor.toLowerCase();
  for (const signer of candidateSigners(agreement, userSign, srcEvmChainId))
    if (signer === requestor) return true;
  return false;
}

/**
 * Recovery is the costliest step of a judgement, and a swap is judged again at each of its events and clock
 * moves: the (lower-case) signer is remembered per message, signature and chain. A pure function's cache,
 * bounded; null for a signature that recovers nobody.
 */
const recovered = new Map<string, string | null>();
const MAX_REMEMBERED = 100_000;

/** Forgets every remembered signer (a benchmark's replay must not profit from its live run's work). */
export function forgetRecoveredSigners(): void {
  recovered.clear();
}

function recoverCached(
  message: ReturnType<typeof swapMessage>,
  signature: string,
  evmChainId: number,
): string | null {
  // Members in their fixed order, each always of its one type (a uint256 as a bigint, or a string).
  const members = JSON.stringify(Object.values(message), (_, v) =>
    typeof v === 'bigint' ? v.toString() : v,
  );
  const key = `${evmChainId}|${signature}|${members}`;
  const known = recovered.get(key);
  if (known !== undefined) return known;
  let signer: string | null;
  try {
    signer = recoverSwapSigner(message, signature, evmChainId, 'swap').toLowerCase();
  } catch {
    signer = null;
  }
  if (recovered.size >= MAX_REMEMBERED) recovered.clear();
  recovered.set(key, signer);
  return signer;
}
