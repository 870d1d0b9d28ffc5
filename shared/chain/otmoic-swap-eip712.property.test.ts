/**
 * The fast path must be indistinguishable from ethers: for random agreements, keys, chains,
 * variants and signature encodings, recoverSwapSigner === ethers.verifyTypedData === the signer.
 */
import fc from 'fast-check';
import { computeAddress, TypedDataEncoder, verifyTypedData } from 'ethers';
import { describe, expect, it } from 'vitest';
import {
  chainIdArbitrary,
  eip712StringArbitrary,
  jsonUintArbitrary,
  privateKeyArbitrary,
  randomSignatureArbitrary,
  serializeSignature,
  signatureFormArbitrary,
} from '../../test/fixtures/eip712-arbitraries.js';
import { ChainInputError } from './errors.js';
import {
  parseSwapAgreement,
  recoverSwapSigner,
  swapDigest,
  swapTypedDataTypes,
  type SwapVariant,
} from './otmoic-swap-eip712.js';
import { jsSecp256k1Backend, nativeSecp256k1Backend, type Secp256k1Backend } from './secp256k1-backend.js';

const uint256 = jsonUintArbitrary(256);
const text = eip712StringArbitrary;

const jsonAgreementArbitrary = fc.record({
  src_chain_id: uint256,
  src_address: text,
  src_token: text,
  src_amount: text,
  dst_chain_id: uint256,
  dst_address: text,
  dst_token: text,
  dst_amount: text,
  dst_native_amount: text,
  requestor: text,
  lp_id: text,
  agreement_reached_time: uint256,
  expected_single_step_time: uint256,
  tolerant_single_step_time: uint256,
  earliest_refund_time: uint256,
});

const variantArbitrary = fc.constantFrom<SwapVariant>('swap', 'single-chain');

function jsonValueFor(agreement: Record<string, unknown>, variant: SwapVariant): Record<string, unknown> {
  if (variant === 'swap') return agreement;
  const { tolerant_single_step_time: _tolerant, earliest_refund_time: _refund, ...singleChain } = agreement;
  return singleChain;
}

function ethersRecoverOrError(
  domain: object,
  variant: SwapVariant,
  value: Record<string, unknown>,
  signature: string,
): string {
  try {
    return verifyTypedData(domain, swapTypedDataTypes(variant), value, signature);
  } catch {
    return 'error';
  }
}

function fastRecoverOrError(
  value: Record<string, unknown>,
  variant: SwapVariant,
  signature: string,
  chainId: bigint | number,
  backend: Secp256k1Backend,
): string {
  try {
    return recoverSwapSigner(parseSwapAgreement(value, variant), signature, chainId, variant, backend);
  } catch (error) {
    if (!(error instanceof ChainInputError) || error.code !== 'INVALID_SIGNATURE') throw error;
    return 'error';
  }
}

const backends: [string, Secp256k1Backend, number][] = [['js', jsSecp256k1Backend, 300]];
if (nativeSecp256k1Backend) backends.unshift(['native', nativeSecp256k1Backend, 3000]);

describe.each(backends)(
  'recoverSwapSigner (%s backend) equals ethers.verifyTypedData',
  (_name, backend, numRuns) => {
    it(`on ${numRuns} random signed agreements (15 and 13 members, 65/64-byte signatures, v 0/1/27/28)`, () => {
      fc.assert(
        fc.property(
          jsonAgreementArbitrary,
          variantArbitrary,
          chainIdArbitrary,
          privateKeyArbitrary,
          signatureFormArbitrary,
          (agreement, variant, chainId, key, form) => {
            const value = jsonValueFor(agreement, variant);
            const domain = { name: 'OtmoicSwap', version: '1', chainId };
            const ethersDigest = TypedDataEncoder.hash(domain, swapTypedDataTypes(variant), value);
            const signature = serializeSignature(key.sign(ethersDigest), form);
            const parsed = parseSwapAgreement(value, variant);

            expect(swapDigest(parsed, chainId, variant)).toBe(ethersDigest);
            const fast = recoverSwapSigner(parsed, signature, chainId, variant, backend);
            expect(fast).toBe(verifyTypedData(domain, swapTypedDataTypes(variant), value, signature));
            expect(fast).toBe(computeAddress(key.publicKey));
          },
        ),
        { numRuns },
      );
    }, 120_000);

    it('agrees with ethers on random (mostly invalid) signatures: same address, or both refuse', () => {
      let recovered = 0;
      fc.assert(
        fc.property(
          jsonAgreementArbitrary,
          variantArbitrary,
          chainIdArbitrary,
          randomSignatureArbitrary,
          (agreement, variant, chainId, signature) => {
            const value = jsonValueFor(agreement, variant);
            const domain = { name: 'OtmoicSwap', version: '1', chainId };
            const fast = fastRecoverOrError(value, variant, signature, chainId, backend);
            expect(fast).toBe(ethersRecoverOrError(domain, variant, value, signature));
            if (fast !== 'error') recovered++;
          },
        ),
        { numRuns: Math.ceil(numRuns / 3) },
      );
      // Random r is an x coordinate about half the time: both outcomes must have been exercised.
      expect(recovered).toBeGreaterThan(0);
      expect(recovered).toBeLessThan(Math.ceil(numRuns / 3));
    }, 120_000);
  },
);
