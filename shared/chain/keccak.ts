/**
 * Synchronous keccak-256 for the hot path.
 *
 * Measured on the 2-core target: hash-wasm's WebAssembly keccak hashes a 42-byte string in ~0.7 µs
 * and a 512-byte struct in ~2.2 µs; @noble/hashes (what ethers uses) needs ~5.5 µs and ~20 µs.
 * A swap digest takes 13 keccaks, so this is the difference between ~15 µs and ~90 µs per recovery.
 * hash-wasm only offers async construction, hence the top-level await; if WebAssembly is not
 * available the module falls back to @noble/hashes, which gives the same bytes.
 */
import { keccak_256 as nobleKeccak256 } from '@noble/hashes/sha3.js';
import { createKeccak } from 'hash-wasm';

type KeccakFunction = (data: Uint8Array) => Uint8Array;

async function loadWasmKeccak(): Promise<KeccakFunction | undefined> {
  try {
    const hasher = await createKeccak(256);
    // One shared hasher is safe: each call runs init/update/digest synchronously, without interleaving.
    return (data) => {
      hasher.init();
      hasher.update(data);
      return hasher.digest('binary');
    };
  } catch {
    return undefined;
  }
}

const wasmKeccak256 = await loadWasmKeccak();

export const keccakBackend: 'wasm' | 'js' = wasmKeccak256 ? 'wasm' : 'js';

/** keccak-256 of raw bytes; returns a fresh 32-byte array. */
export const keccak256Bytes: KeccakFunction = wasmKeccak256 ?? ((data) => nobleKeccak256(data));

/** keccak-256 of a string's UTF-8 bytes (EIP-712 hashes `string` members this way). */
export function keccak256Utf8(text: string): Uint8Array {
  return keccak256Bytes(Buffer.from(text, 'utf8'));
}
