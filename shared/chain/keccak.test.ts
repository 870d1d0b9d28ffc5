import fc from 'fast-check';
import { getAddress, keccak256, toUtf8Bytes } from 'ethers';
import { describe, expect, it } from 'vitest';
import { checksumAddress } from './address-checksum.js';
import { bytesToHex } from './hex.js';
import { keccak256Bytes, keccak256Utf8, keccakBackend } from './keccak.js';

describe('keccak256 (hot-path implementation)', () => {
  it('runs on WebAssembly here', () => {
    expect(keccakBackend).toBe('wasm');
  });

  it('equals ethers keccak256 on random bytes around the 136-byte rate boundary and beyond', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        expect(bytesToHex(keccak256Bytes(bytes))).toBe(keccak256(bytes));
      }),
      { numRuns: 1000 },
    );
    for (const length of [0, 135, 136, 137, 272]) {
      const bytes = new Uint8Array(length).fill(0xab);
      expect(bytesToHex(keccak256Bytes(bytes))).toBe(keccak256(bytes));
    }
  });

  it('hashes the UTF-8 of strings like ethers toUtf8Bytes', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(bytesToHex(keccak256Utf8(text))).toBe(keccak256(toUtf8Bytes(text)));
      }),
      { numRuns: 500 },
    );
  });

  it('returns a fresh array each call (the WASM hasher is shared)', () => {
    const first = keccak256Bytes(new Uint8Array([1]));
    const copy = Uint8Array.from(first);
    keccak256Bytes(new Uint8Array([2]));
    expect(first).toEqual(copy);
  });
});

describe('checksumAddress', () => {
  it('equals ethers getAddress (EIP-55)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), (bytes) => {
        expect(checksumAddress(bytes)).toBe(getAddress(bytesToHex(bytes)));
      }),
      { numRuns: 1000 },
    );
  });
});
