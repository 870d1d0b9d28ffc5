/**
 * Consent from signatures (DESIGN §7): the addresses an OtmoicSwap signature of an agreement recovers to. Pure
 * crypto, no I/O, one definition for the Classifier (which judges with it and remembers what it recovered:
 * services/classifier/consent.ts) and the Agent (which refuses, before paying gas, a complaint whose own
 * signatures prove nothing). A signature that is malformed or recovers nobody proves nothing, never an error.
 */
import { recoverSwapSigner } from '../chain/otmoic-swap-eip712.js';
import { messageVersions, swapMessage, type Agreement, type MessageVersion } from './agreement.js';

/** The lower-case signer of one version of the Message, or null when the signature recovers nobody. */
export type VersionSigner = (version: MessageVersion) => string | null;

/** Recovers the signer of each version asked for (no memo). */
export function versionSigner(agreement: Agreement, signature: string, evmChainId: number): VersionSigner {
  return (version) => {
    try {
      const message = swapMessage(agreement, version.rendering, version.srcAddress);
      return recoverSwapSigner(message, signature, evmChainId, 'swap').toLowerCase();
    } catch {
      return null;
    }
  };
}

/**
 * Addresses the signature recovers to, one per version of the Message (messageVersions: each rendering of the
 * address members, checksummed first, src_address as the sender and then as its alias, the TransferOut's
 * receiver), without duplicates, recovered as they are asked for and kept: a caller that stops at the first
 * pays one recovery, and one that comes back pays nothing twice. Exactly one of them is the real signer when
 * the signature is genuine. At most 32 recoveries for an agreement read from a TransferOut, 16 for one without
 * an alias.
 */
export class SignerCandidates {
  private readonly versions: readonly MessageVersion[];
  private readonly found: string[] = [];
  private next = 0;

  constructor(
    agreement: Agreement,
    private readonly signerOf: VersionSigner,
  ) {
    this.versions = messageVersions(agreement);
  }

  /** A new pass over the candidates, from the first. */
  *signers(): Generator<string, void, undefined> {
    for (let i = 0; ; i++) {
      while (i >= this.found.length && this.next < this.versions.length) this.recoverNext();
      if (i >= this.found.length) return;
      yield this.found[i]!;
    }
  }

  private recoverNext(): void {
    const signer = this.signerOf(this.versions[this.next++]!);
    // A malformed signature is malformed under every version.
    if (signer === null) this.next = this.versions.length;
    else if (!this.found.includes(signer)) this.found.push(signer);
  }
}

/** Is `address` among the candidates (compared case-insensitively)? Stops at the first match. */
export function signedBy(candidates: Iterable<string>, address: string): boolean {
  const wanted = address.toLowerCase();
  for (const signer of candidates) if (signer === wanted) return true;
  return false;
}
