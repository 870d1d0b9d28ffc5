/**
 * Parsing of ECDSA signatures as Ethereum wallets send them, with ethers v6's acceptance rules
 * (restricted to the v values real wallets use):
 * - 65 bytes r ‖ s ‖ v with v in {27, 28, 0, 1}; s must not have its top bit set ("non-canonical s").
 * - 64 bytes EIP-2098 compact r ‖ yParityAndS, the top bit of the second word being the y parity.
 * Anything else is a ChainInputError INVALID_SIGNATURE (the original answered `{"address":"0x0"}`).
 */
import { ChainInputError } from './errors.js';
import { hexToBytesOrUndefined } from './hex.js';

export interface ParsedSignature {
  /** r ‖ s, 64 bytes, s with the EIP-2098 parity bit cleared. */
  readonly compact: Uint8Array;
  readonly recoveryId: 0 | 1;
}

export function parseSignature(signature: string | Uint8Array): ParsedSignature {
  const bytes = typeof signature === 'string' ? hexToBytesOrUndefined(signature) : signature;
  if (bytes === undefined) {
    throw new ChainInputError(
      'INVALID_SIGNATURE',
      'signature must be 0x-prefixed hex of 65 bytes (r, s, v) or 64 bytes (EIP-2098)',
    );
  }
  if (bytes.length === 65) return parseRsv(bytes);
  if (bytes.length === 64) return parseEip2098(bytes);
  throw new ChainInputError(
    'INVALID_SIGNATURE',
    `signature must be 65 bytes (r, s, v) or 64 bytes (EIP-2098), got ${bytes.length} bytes`,
  );
}

function parseRsv(bytes: Uint8Array): ParsedSignature {
  const v = bytes[64];
  let recoveryId: 0 | 1;
  if (v === 27 || v === 0) recoveryId = 0;
  else if (v === 28 || v === 1) recoveryId = 1;
  else throw new ChainInputError('INVALID_SIGNATURE', `signature v must be 27, 28, 0 or 1, got ${String(v)}`);
  // ethers rejects this too: with the top bit set, s could be confused with an EIP-2098 parity bit.
  if (((bytes[32] ?? 0) & 0x80) !== 0)
    throw new ChainInputError('INVALID_SIGNATURE', 'signature has a non-canonical s');
  return { compact: bytes.slice(0, 64), recoveryId };
}

function parseEip2098(bytes: Uint8Array): ParsedSignature {
  const compact = bytes.slice(0, 64);
  const yParityAndSTopByte = compact[32] ?? 0;
  compact[32] = yParityAndSTopByte & 0x7f;
  return { compact, recoveryId: (yParityAndSTopByte & 0x80) === 0 ? 0 : 1 };
}

/**
 * A 65-byte hex signature with v as 27/28 (lower-case). Signers that answer v 0/1 recover the same key, but a
 * contract using OpenZeppelin's ECDSA.recover (the Otmoic reputation contract) refuses v 0/1: sent as given, a
 * complaint would fail at estimate every time, and its signer cannot sign the same message differently
 * (RFC 6979 signatures are deterministic).
 */
export function withCanonicalV(signature: string): string {
  const lower = signature.toLowerCase();
  if (lower.length !== 132) return lower;
  const v = parseInt(lower.slice(130), 16);
  return v < 27 ? lower.slice(0, 130) + (v + 27).toString(16) : lower;
}
