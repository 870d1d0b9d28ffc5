import fc from 'fast-check';
import { toBeHex, TypedDataEncoder } from 'ethers';
import { describe, expect, it } from 'vitest';
import { domainSeparator, writeUintWord } from './eip712-encoding.js';
import { bytesToHex } from './hex.js';

describe('writeUintWord', () => {
  it('writes big-endian words like ethers toBeHex', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }), (value) => {
        const word = new Uint8Array(32);
        writeUintWord(new DataView(word.buffer), 0, value);
        expect(bytesToHex(word)).toBe(toBeHex(value, 32));
      }),
      { numRuns: 500 },
    );
  });

  it('refuses values it would have to truncate or wrap', () => {
    const view = new DataView(new ArrayBuffer(32));
    expect(() => writeUintWord(view, 0, 1n << 256n)).toThrow(RangeError);
    expect(() => writeUintWord(view, 0, -1n)).toThrow(RangeError);
  });
});

describe('domainSeparator', () => {
  it('equals ethers TypedDataEncoder.hashDomain with and without verifyingContract', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary' }),
        fc.string(),
        fc.bigInt({ min: 1n, max: (1n << 256n) - 1n }),
        fc.option(fc.uint8Array({ minLength: 20, maxLength: 20 }), { nil: undefined }),
        (name, version, chainId, contract) => {
          const domain = {
            name,
            version,
            chainId,
            ...(contract ? { verifyingContract: bytesToHex(contract) } : {}),
          };
          expect(bytesToHex(domainSeparator(name, version, chainId, contract))).toBe(
            TypedDataEncoder.hashDomain(domain),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
