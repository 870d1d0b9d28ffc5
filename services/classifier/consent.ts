/**
 * Consent from signatures (DESIGN §7): who signed an agreement under the OtmoicSwap domain of a chain. Pure
 * crypto, no I/O. A signature that is malformed or recovers nobody proves nothing (null), never an error.
 */
import { recoverSwapSigner } from '../../shared/chain/otmoic-swap-eip712.js';
import { ADDRESS_RENDERINGS, swapMessage, type Agreement } from '../../shared/otmoic/agreement.js';

/**
 * Addresses the signature recovers to, one per rendering of the address members (checksummed first), without
 * duplicates. Exactly one of them is the real signer when the signature is genuine.
 */
export function candidateSigners(agreement: Agreement, signature: string, evmChainId: number): string[] {
  const found: string[] = [];
  for (const rendering of ADDRESS_RENDERINGS) {
    try {
      const signer = recoverSwapSigner(swapMessage(agreement, rendering), signature, evmChainId, 'swap');
      if (!found.includes(signer.toLowerCase())) found.push(signer.toLowerCase());
    } catch {
      return found; // malformed signature: the same under every rendering
    }
  }
  return found;
}

/** userSign under OtmoicSwap{source chain} recovers `requestor` (compared case-insensitively). */
export function userConsents(agreement: Agreement, userSign: string, srcEvmChainId: number): boolean {
  const requestor = agreement.requestor.toLowerCase();
  return candidateSigners(agreement, userSign, srcEvmChainId).includes(requestor);
}
