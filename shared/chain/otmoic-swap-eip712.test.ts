import { TypedDataEncoder, verifyTypedData } from 'ethers';
import { describe, expect, it } from 'vitest';
import { relayVectors } from '../../test/fixtures/otmoic-relay-vectors.js';
import { ChainInputError } from './errors.js';
import {
  parseSwapAgreement,
  recoverSwapSigner,
  swapDigest,
  swapDomain,
  swapDomainSeparator,
  swapEncodeType,
  swapStructHash,
  swapTypedDataTypes,
  swapTypeHash,
} from './otmoic-swap-eip712.js';
import { jsSecp256k1Backend, nativeSecp256k1Backend, type Secp256k1Backend } from './secp256k1-backend.js';

const { eip712 } = relayVectors;
const SIGNER = eip712.expected_signer;

function thrownBy(run: () => unknown): ChainInputError {
  try {
    run();
  } catch (error) {
    if (error instanceof ChainInputError) return error;
    throw new Error(`expected a ChainInputError, got ${String(error)}`);
  }
  throw new Error('expected a ChainInputError, nothing was thrown');
}

const backends: [string, Secp256k1Backend][] = [['js', jsSecp256k1Backend]];
if (nativeSecp256k1Backend) backends.unshift(['native', nativeSecp256k1Backend]);

describe('OtmoicSwap typed data definition', () => {
  it('has the 15 members of the vectors in their order, and their type hash', () => {
    expect(swapTypedDataTypes('swap')).toEqual(eip712.types);
    expect(swapEncodeType('swap')).toBe(eip712.encode_type);
    expect(swapTypeHash('swap')).toBe(eip712.type_hash);
    expect(TypedDataEncoder.from(swapTypedDataTypes('swap')).encodeType('Message')).toBe(eip712.encode_type);
  });

  it('has the 13-member single-chain variant', () => {
    expect(swapTypedDataTypes('single-chain')).toEqual(eip712.single_swap.types);
    expect(swapEncodeType('single-chain')).toBe(eip712.single_swap.encode_type);
  });

  it('builds the domain without verifyingContract', () => {
    expect(swapDomain(97)).toEqual({ name: 'OtmoicSwap', version: '1', chainId: 97n });
    expect(swapDomain('56')).toEqual({ name: 'OtmoicSwap', version: '1', chainId: 56n });
    expect(thrownBy(() => swapDomain(0)).code).toBe('INVALID_CHAIN_ID');
    expect(thrownBy(() => swapDomain(-1)).code).toBe('INVALID_CHAIN_ID');
    expect(thrownBy(() => swapDomain('0x61')).code).toBe('INVALID_CHAIN_ID');
  });
});

describe.each(eip712.cases.map((c) => [c.chain_id, c] as const))(
  'vector case on chain %i',
  (chainId, vector) => {
    const value = parseSwapAgreement(vector.request.value, 'swap');

    it('gives the domain separator, struct hash and digest of the vector', () => {
      expect(swapDomainSeparator(chainId)).toBe(vector.domain_separator);
      expect(swapStructHash(value, 'swap')).toBe(vector.struct_hash);
      expect(swapDigest(value, chainId, 'swap')).toBe(vector.digest);
    });

    it.each(backends)(
      'recovers the signer from 65-byte, v 0/1 and EIP-2098 signatures (%s backend)',
      (_name, backend) => {
        expect(recoverSwapSigner(value, vector.request.signature, chainId, 'swap', backend)).toBe(SIGNER);
        expect(recoverSwapSigner(value, vector.signature_with_v_0_or_1, chainId, 'swap', backend)).toBe(
          SIGNER,
        );
        expect(recoverSwapSigner(value, vector.compact_eip2098_signature, chainId, 'swap', backend)).toBe(
          SIGNER,
        );
        expect(vector.response_for_compact_signature.address).toBe(SIGNER);
      },
    );

    it.each(backends)(
      'recovers the address of the vector under the other chain id (%s backend)',
      (_name, backend) => {
        const other = vector.response_when_server_CHAIN_ID_is_other;
        expect(
          recoverSwapSigner(value, vector.request.signature, other.server_chain_id, 'swap', backend),
        ).toBe(other.address);
        expect(other.address).not.toBe(SIGNER);
      },
    );
  },
);

describe('vector variants', () => {
  const variantByNote = (fragment: string) => {
    const variant = eip712.variants.find((v) => v.note.includes(fragment));
    if (!variant) throw new Error(`no vector variant with note containing "${fragment}"`);
    return variant;
  };

  it('accepts uint256 members as decimal strings with the same digest and signer', () => {
    const variant = variantByNote('decimal strings');
    const fromStrings = parseSwapAgreement(variant.request.value, 'swap');
    const fromNumbers = parseSwapAgreement(eip712.cases[0]!.request.value, 'swap');
    expect(fromStrings).toEqual(fromNumbers);
    expect(recoverSwapSigner(fromStrings, variant.request.signature, variant.server_chain_id, 'swap')).toBe(
      variant.response.address,
    );
  });

  it('ignores an unknown extra key', () => {
    const variant = variantByNote('extra unknown key');
    const value = parseSwapAgreement(variant.request.value, 'swap');
    expect(value).not.toHaveProperty('bridge_name');
    expect(recoverSwapSigner(value, variant.request.signature, variant.server_chain_id, 'swap')).toBe(
      variant.response.address,
    );
  });

  it('recovers a different address for a tampered value (callers compare)', () => {
    const variant = variantByNote('tampered');
    const value = parseSwapAgreement(variant.request.value, 'swap');
    expect(recoverSwapSigner(value, variant.request.signature, variant.server_chain_id, 'swap')).toBe(
      variant.response.address,
    );
    expect(variant.response.address).not.toBe(SIGNER);
  });

  // Defects of the original, answered there with {"code":200,"address":"0x0"}: we throw typed errors.
  it('rejects a missing member with INVALID_AGREEMENT naming it (original: address "0x0")', () => {
    const variant = variantByNote('missing field');
    expect(variant.response.address).toBe('0x0');
    const error = thrownBy(() => parseSwapAgreement(variant.request.value, 'swap'));
    expect(error.code).toBe('INVALID_AGREEMENT');
    expect(error.message).toBe('value.earliest_refund_time is required');
  });

  it('rejects a garbage signature with INVALID_SIGNATURE (original: address "0x0")', () => {
    const variant = variantByNote('garbage signature');
    const value = parseSwapAgreement(variant.request.value, 'swap');
    const error = thrownBy(() =>
      recoverSwapSigner(value, variant.request.signature, variant.server_chain_id, 'swap'),
    );
    expect(error.code).toBe('INVALID_SIGNATURE');
    expect(error.message).toMatch(/65 bytes .* or 64 bytes/);
  });

  it('rejects a JSON number in a string member (ethers 5 hashed it like "")', () => {
    const variant = variantByNote('JSON number in a string field');
    expect(variant.response.address).toBe(SIGNER);
    const error = thrownBy(() => parseSwapAgreement(variant.request.value, 'swap'));
    expect(error.code).toBe('INVALID_AGREEMENT');
    expect(error.message).toBe('value.dst_native_amount must be a string');
  });

  it('hashes the string "0" as "0": the signature made over "" recovers another address', () => {
    const variant = variantByNote('against the string "0"');
    const value = parseSwapAgreement(variant.request.value, 'swap');
    expect(recoverSwapSigner(value, variant.request.signature, variant.server_chain_id, 'swap')).toBe(
      variant.response.address,
    );
    const signedOverEmpty = parseSwapAgreement({ ...variant.request.value, dst_native_amount: '' }, 'swap');
    expect(
      recoverSwapSigner(signedOverEmpty, variant.request.signature, variant.server_chain_id, 'swap'),
    ).toBe(SIGNER);
  });

  it('recovers the signer of the single-chain (13-member) vector', () => {
    const { request, server_chain_id, response } = eip712.single_swap;
    const value = parseSwapAgreement(request.value, 'single-chain');
    for (const [, backend] of backends) {
      expect(recoverSwapSigner(value, request.signature, server_chain_id, 'single-chain', backend)).toBe(
        response.address,
      );
    }
    // The same message under the 15-member type is a different digest.
    expect(() => parseSwapAgreement(request.value, 'swap')).toThrow(ChainInputError);
  });
});

describe('swap agreement schema', () => {
  const valid = eip712.cases[0]!.request.value;
  const messageFor = (field: string, input: unknown) =>
    thrownBy(() => parseSwapAgreement({ ...valid, [field]: input }, 'swap')).message;

  it('turns numeric members into bigint, from JSON integers or decimal strings', () => {
    const value = parseSwapAgreement(
      { ...valid, src_amount: '5', agreement_reached_time: '0001700000000' },
      'swap',
    );
    expect(value.agreement_reached_time).toBe(1700000000n);
    expect(value.src_chain_id).toBe(9006n);
    expect(value.src_amount).toBe('5');
    const max = ((1n << 256n) - 1n).toString();
    expect(parseSwapAgreement({ ...valid, earliest_refund_time: max }, 'swap').earliest_refund_time).toBe(
      BigInt(max),
    );
  });

  it.each([
    ['a float', 1.5, 'must be an integer, got 1.5'],
    ['a negative number', -1, 'must not be negative'],
    ['a negative string', '-1', 'must be a decimal integer string, got "-1"'],
    ['hex text', '0x3c', 'must be a decimal integer string, got "0x3c"'],
    ['a decimal fraction string', '60.0', 'must be a decimal integer string, got "60.0"'],
    ['an exponent string', '6e1', 'must be a decimal integer string, got "6e1"'],
    ['an empty string', '', 'must be a decimal integer string, got ""'],
    ['a padded string', ' 60', 'must be a decimal integer string, got " 60"'],
    [
      'an unsafe JSON integer',
      2 ** 60,
      'is a JSON number above 2^53-1, which loses precision: send it as a decimal string',
    ],
    ['2^256', (1n << 256n).toString(), 'must be below 2^256'],
    ['a boolean', true, 'must be an integer or a decimal integer string'],
    ['null', null, 'is required'],
  ])('rejects %s in a uint256 member', (_label, input, message) => {
    expect(messageFor('expected_single_step_time', input)).toBe(`value.expected_single_step_time ${message}`);
  });

  it('rejects non-strings and lone surrogates in string members, and lists every bad field', () => {
    expect(messageFor('lp_id', 7)).toBe('value.lp_id must be a string');
    expect(messageFor('lp_id', 'lp-\uD800')).toBe(
      'value.lp_id contains a lone UTF-16 surrogate (not valid UTF-8)',
    );
    expect(parseSwapAgreement({ ...valid, lp_id: 'lp-\uD83D\uDE00' }, 'swap').lp_id).toBe('lp-😀');
    const error = thrownBy(() => parseSwapAgreement({ ...valid, lp_id: 1, src_chain_id: 'x' }, 'swap'));
    expect(error.message).toBe(
      'value.src_chain_id must be a decimal integer string, got "x"; value.lp_id must be a string',
    );
    expect(thrownBy(() => parseSwapAgreement('nope', 'swap')).code).toBe('INVALID_AGREEMENT');
  });
});

describe('signature validation', () => {
  const vector = eip712.cases[0]!;
  const value = parseSwapAgreement(vector.request.value, 'swap');
  const rs = vector.request.signature.slice(2, 130);
  const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
  const word = (n: bigint) => n.toString(16).padStart(64, '0');

  it.each([
    ['v = 29', '0x' + rs + '1d'],
    ['v = 26', '0x' + rs + '1a'],
    ['v = 37 (EIP-155 v, not sent by wallets)', '0x' + rs + '25'],
    ['66 bytes', vector.request.signature + '00'],
    ['63 bytes', vector.request.signature.slice(0, 128)],
    ['no 0x prefix', vector.request.signature.slice(2)],
    ['a non-hex digit', '0x' + rs.slice(0, -1) + 'z1b'],
    ['s with its top bit set in 65 bytes', '0x' + rs.slice(0, 64) + '8' + rs.slice(65) + '1b'],
    ['r = 0', '0x' + word(0n) + rs.slice(64) + '1b'],
    ['r = n', '0x' + word(N) + rs.slice(64) + '1b'],
    ['s = 0', '0x' + rs.slice(0, 64) + word(0n) + '1b'],
  ])('rejects %s with INVALID_SIGNATURE on every backend', (_label, signature) => {
    for (const [, backend] of backends) {
      expect(thrownBy(() => recoverSwapSigner(value, signature, 97, 'swap', backend)).code).toBe(
        'INVALID_SIGNATURE',
      );
    }
    // ethers refuses these too (it also takes EIP-155 v values, which we do not).
    if (!_label.startsWith('v = 37')) {
      expect(() => verifyTypedData(vector.domain, eip712.types, vector.request.value, signature)).toThrow();
    }
  });

  it('accepts signature bytes as well as hex', () => {
    expect(recoverSwapSigner(value, Buffer.from(vector.request.signature.slice(2), 'hex'), 97, 'swap')).toBe(
      SIGNER,
    );
  });
});
