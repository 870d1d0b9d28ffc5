import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { keccak256 } from 'ethers';
import { describe, expect, it } from 'vitest';
import { relayVectors } from '../../test/fixtures/otmoic-relay-vectors.js';
import { ChainInputError } from './errors.js';
import { hashlock } from './hashlock.js';

function expectInvalidPreimage(input: unknown): void {
  let thrown: unknown;
  try {
    hashlock(input);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ChainInputError);
  expect((thrown as ChainInputError).code).toBe('INVALID_PREIMAGE');
  expect((thrown as ChainInputError).message).toMatch(/preimage/);
}

describe('hashlock vectors', () => {
  const accepted = relayVectors.hashlock.filter((vector) => vector.response.code === 200);
  const rejected = relayVectors.hashlock.filter((vector) => vector.response.http_status === 500);

  it('has both kinds of vectors', () => {
    expect(accepted.length).toBeGreaterThanOrEqual(4);
    expect(rejected.length).toBeGreaterThanOrEqual(2);
  });

  it.each(accepted.map((vector) => [JSON.stringify(vector.request.preimage).slice(0, 40), vector] as const))(
    'hashes %s like the original',
    (_label, vector) => {
      const result = hashlock(vector.request.preimage);
      expect(result).toBe(vector.response.hashlock);
      expect(result).toBe(result.toLowerCase());
      if (vector.not_this_sha256_of_bytes) expect(result).not.toBe(vector.not_this_sha256_of_bytes);
      if (vector.not_this_keccak_of_hex_text) expect(result).not.toBe(vector.not_this_keccak_of_hex_text);
    },
  );

  it('is not sha256 of the bytes (the vectors record what a wrong implementation gives)', () => {
    const vector = accepted[0]!;
    const bytes = Buffer.from(String(vector.request.preimage).slice(2), 'hex');
    expect('0x' + createHash('sha256').update(bytes).digest('hex')).toBe(vector.not_this_sha256_of_bytes);
  });

  // The original answered HTTP 500 with ethers' message as plain text; we throw a typed error instead.
  it.each(rejected.map((vector) => [String(vector.request.preimage)] as const))(
    'rejects %s with INVALID_PREIMAGE',
    (preimage) => {
      expectInvalidPreimage(preimage);
    },
  );
});

describe('hashlock input validation', () => {
  it.each([
    ['31 bytes', '0x' + '02'.repeat(31)],
    ['33 bytes', '0x' + '02'.repeat(33)],
    ['odd length', '0x' + '2'.repeat(63)],
    ['non-hex digit', '0x' + '0g'.repeat(32)],
    ['0X prefix', '0X' + '02'.repeat(32)],
    ['empty', ''],
    ['number', 2],
    ['null', null],
    ['object', { preimage: '0x' + '02'.repeat(32) }],
    ['array of 31', Array.from({ length: 31 }, () => 2)],
    ['array with 256', [...Array.from({ length: 31 }, () => 2), 256]],
    ['array with -1', [...Array.from({ length: 31 }, () => 2), -1]],
    ['array with 1.5', [...Array.from({ length: 31 }, () => 2), 1.5]],
    ['array with "2"', [...Array.from({ length: 31 }, () => 2), '2']],
  ])('rejects %s', (_label, input) => {
    expectInvalidPreimage(input);
  });

  it('equals ethers keccak256 of the raw bytes, for hex in any case and for byte arrays', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        const expected = keccak256(bytes);
        const hex = Buffer.from(bytes).toString('hex');
        expect(hashlock('0x' + hex)).toBe(expected);
        expect(hashlock('0x' + hex.toUpperCase())).toBe(expected);
        expect(hashlock(Array.from(bytes))).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});
