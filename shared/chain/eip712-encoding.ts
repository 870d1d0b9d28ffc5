/**
 * EIP-712 building blocks for hand-laid struct encodings (the fast path).
 *
 * encodeData puts every member in one 32-byte word: uint64/uint256 as big-endian, `string` as
 * keccak256 of its UTF-8, `address` left-padded. hashStruct = keccak256(typeHash ‖ words), and the
 * signed digest = keccak256(0x19 0x01 ‖ domainSeparator ‖ hashStruct).
 */
import { keccak256Bytes, keccak256Utf8 } from './keccak.js';

export const WORD_BYTES = 32;

const UINT64_MASK = (1n << 64n) - 1n;

/**
 * Writes an unsigned integer (< 2^256, already validated) as a big-endian word into a zeroed buffer.
 * DataView limbs avoid the bigint -> hex -> bytes round trip; small values need a single limb.
 */
export function writeUintWord(view: DataView, wordIndex: number, value: bigint): void {
  // Values reach here typed by a schema; a number or undefined would be a caller bug, not bad input.
  if (typeof value !== 'bigint')
    throw new TypeError(`EIP-712 uint member must be a bigint, got ${typeof value}`);
  // Never truncate silently: out-of-range values would otherwise wrap into a valid-looking word.
  if (value < 0n || value >> 256n !== 0n) throw new RangeError('EIP-712 uint member must be in [0, 2^256)');
  const wordStart = wordIndex * WORD_BYTES;
  let rest = value;
  for (let limb = 3; limb >= 0 && rest !== 0n; limb--) {
    view.setBigUint64(wordStart + limb * 8, rest & UINT64_MASK);
    rest >>= 64n;
  }
}

export function writeStringWord(bytes: Uint8Array, wordIndex: number, text: string): void {
  if (typeof text !== 'string')
    throw new TypeError(`EIP-712 string member must be a string, got ${typeof text}`);
  bytes.set(keccak256Utf8(text), wordIndex * WORD_BYTES);
}

/** 20-byte address into the low bytes of its word. */
export function writeAddressWord(bytes: Uint8Array, wordIndex: number, address: Uint8Array): void {
  bytes.set(address, wordIndex * WORD_BYTES + (WORD_BYTES - address.length));
}

export function typeHash(encodeType: string): Uint8Array {
  return keccak256Utf8(encodeType);
}

const EIP712_DOMAIN_NAME_VERSION_CHAIN = typeHash('EIP712Domain(string name,string version,uint256 chainId)');
const EIP712_DOMAIN_NAME_VERSION_CHAIN_CONTRACT = typeHash(
  'EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)',
);

/** Domain separator of `{name, version, chainId[, verifyingContract]}` (no salt). */
export function domainSeparator(
  name: string,
  version: string,
  chainId: bigint,
  verifyingContract?: Uint8Array,
): Uint8Array {
  const words = verifyingContract ? 5 : 4;
  const encoded = new Uint8Array(words * WORD_BYTES);
  const view = new DataView(encoded.buffer);
  encoded.set(
    verifyingContract ? EIP712_DOMAIN_NAME_VERSION_CHAIN_CONTRACT : EIP712_DOMAIN_NAME_VERSION_CHAIN,
    0,
  );
  writeStringWord(encoded, 1, name);
  writeStringWord(encoded, 2, version);
  writeUintWord(view, 3, chainId);
  if (verifyingContract) writeAddressWord(encoded, 4, verifyingContract);
  return keccak256Bytes(encoded);
}

export function typedDataDigest(separator: Uint8Array, structHash: Uint8Array): Uint8Array {
  const encoded = new Uint8Array(2 + 2 * WORD_BYTES);
  encoded[0] = 0x19;
  encoded[1] = 0x01;
  encoded.set(separator, 2);
  encoded.set(structHash, 2 + WORD_BYTES);
  return keccak256Bytes(encoded);
}
