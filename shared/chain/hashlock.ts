/**
 * Swap hashlock: keccak256 of the 32 raw preimage bytes, i.e. the contract's own
 * `keccak256(abi.encodePacked(bytes32 preimage))`. Not sha256, not a hash of the hex text.
 */
import { ChainInputError } from './errors.js';
import { bytesToHex, hexToBytesOrUndefined } from './hex.js';
import { keccak256Bytes } from './keccak.js';

const PREIMAGE_BYTES = 32;

/**
 * Accepts 0x-hex of exactly 32 bytes (any case) or, for compatibility with the original relay
 * (whose ethers-5 solidityPack took arrays), a JSON array of 32 integers 0..255.
 * Returns the hashlock as lowercase 0x-hex; throws ChainInputError INVALID_PREIMAGE otherwise.
 */
export function hashlock(preimage: unknown): string {
  return bytesToHex(keccak256Bytes(preimageBytes(preimage)));
}

export function preimageBytes(preimage: unknown): Uint8Array {
  if (typeof preimage === 'string') {
    const bytes = hexToBytesOrUndefined(preimage);
    if (bytes?.length === PREIMAGE_BYTES) return bytes;
    throw new ChainInputError('INVALID_PREIMAGE', 'preimage must be 32 bytes of 0x-prefixed hex');
  }
  if (Array.isArray(preimage)) {
    if (preimage.length === PREIMAGE_BYTES && preimage.every(isByteValue)) return Uint8Array.from(preimage);
    throw new ChainInputError(
      'INVALID_PREIMAGE',
      'preimage array must hold exactly 32 integers from 0 to 255',
    );
  }
  throw new ChainInputError('INVALID_PREIMAGE', 'preimage must be 32 bytes of 0x-prefixed hex');
}

function isByteValue(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 255;
}
