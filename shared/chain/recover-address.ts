/**
 * Signer address of a signature over a 32-byte digest: recover the public key, then the address is
 * the last 20 bytes of keccak256(uncompressed key without its 0x04 prefix).
 */
import { checksumAddress } from './address-checksum.js';
import { ChainInputError } from './errors.js';
import { keccak256Bytes } from './keccak.js';
import { defaultSecp256k1Backend, type Secp256k1Backend } from './secp256k1-backend.js';
import { parseSignature } from './signature.js';

/** Checksummed signer address; ChainInputError INVALID_SIGNATURE when no key can be recovered. */
export function recoverAddressFromDigest(
  digest: Uint8Array,
  signature: string | Uint8Array,
  backend: Secp256k1Backend = defaultSecp256k1Backend,
): string {
  const { compact, recoveryId } = parseSignature(signature);
  let publicKey: Uint8Array;
  try {
    publicKey = backend.recoverPublicKey(digest, compact, recoveryId);
  } catch (cause) {
    // r or s out of range, r not the x of a curve point, or the point at infinity.
    throw new ChainInputError('INVALID_SIGNATURE', 'signature does not recover to a public key', { cause });
  }
  return checksumAddress(keccak256Bytes(publicKey.subarray(1)).subarray(12));
}
