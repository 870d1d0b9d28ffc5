/**
 * The OtmoicSwap EIP-712 message that users and LPs sign for a swap agreement.
 *
 * Domain `{name: "OtmoicSwap", version: "1", chainId}` (no verifyingContract, no salt); primary type
 * `Message`. The cross-chain `swap` variant has 15 members; the `single-chain` variant signs the
 * first 13 (no tolerant_single_step_time / earliest_refund_time).
 *
 * Fast path: type hash and per-chain domain separators are computed once; the struct is laid out by
 * hand in 32-byte words and hashed with the WASM keccak; the key is recovered by libsecp256k1
 * (@noble/curves when the native module is unavailable). 26-30x ethers.verifyTypedData on the
 * 2-core target (bench/crypto.ts); equality with ethers is proven by the vectors and property tests.
 */
import type { TypedDataField } from 'ethers';
import { z } from 'zod';
import { parseChainId, type ChainIdInput } from './chain-id.js';
import {
  domainSeparator,
  typeHash,
  typedDataDigest,
  WORD_BYTES,
  writeStringWord,
  writeUintWord,
} from './eip712-encoding.js';
import { bytesToHex } from './hex.js';
import { keccak256Bytes } from './keccak.js';
import { recoverAddressFromDigest } from './recover-address.js';
import { parseOrThrow } from './schema-errors.js';
import type { Secp256k1Backend } from './secp256k1-backend.js';
import { eip712StringField } from './string-field.js';
import { unsignedIntegerField } from './unsigned-integer.js';

export type SwapVariant = 'swap' | 'single-chain';

export const SWAP_DOMAIN_NAME = 'OtmoicSwap';
export const SWAP_DOMAIN_VERSION = '1';
export const SWAP_PRIMARY_TYPE = 'Message';

const uint256 = unsignedIntegerField(256);
const text = eip712StringField();

// Member order is the signed order; the schema shapes below follow it key by key.
const singleChainSwapAgreementShape = {
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
};

/** Unknown keys are dropped, as the original (ethers' encoder ignored them). */
export const singleChainSwapAgreementSchema = z.object(singleChainSwapAgreementShape);

export const swapAgreementSchema = z.object({
  ...singleChainSwapAgreementShape,
  tolerant_single_step_time: uint256,
  earliest_refund_time: uint256,
});

export type SingleChainSwapAgreement = z.output<typeof singleChainSwapAgreementSchema>;
export type SwapAgreement = z.output<typeof swapAgreementSchema>;
export type SwapAgreementOf<V extends SwapVariant> = V extends 'single-chain'
  ? SingleChainSwapAgreement
  : SwapAgreement;

const MEMBER_TYPES: Record<keyof SwapAgreement, 'uint256' | 'string'> = {
  src_chain_id: 'uint256',
  src_address: 'string',
  src_token: 'string',
  src_amount: 'string',
  dst_chain_id: 'uint256',
  dst_address: 'string',
  dst_token: 'string',
  dst_amount: 'string',
  dst_native_amount: 'string',
  requestor: 'string',
  lp_id: 'string',
  agreement_reached_time: 'uint256',
  expected_single_step_time: 'uint256',
  tolerant_single_step_time: 'uint256',
  earliest_refund_time: 'uint256',
};

const SWAP_MEMBERS = Object.keys(swapAgreementSchema.shape) as (keyof SwapAgreement)[];
const SINGLE_CHAIN_MEMBERS = Object.keys(
  singleChainSwapAgreementSchema.shape,
) as (keyof SingleChainSwapAgreement)[];

function membersOf(variant: SwapVariant): readonly (keyof SwapAgreement)[] {
  return variant === 'swap' ? SWAP_MEMBERS : SINGLE_CHAIN_MEMBERS;
}

/** The `types` argument for ethers' signTypedData / verifyTypedData. */
export function swapTypedDataTypes(variant: SwapVariant): Record<string, TypedDataField[]> {
  return { [SWAP_PRIMARY_TYPE]: membersOf(variant).map((name) => ({ name, type: MEMBER_TYPES[name] })) };
}

/** `Message(uint256 src_chain_id,string src_address,...)`. */
export function swapEncodeType(variant: SwapVariant): string {
  const members = membersOf(variant).map((name) => `${MEMBER_TYPES[name]} ${name}`);
  return `${SWAP_PRIMARY_TYPE}(${members.join(',')})`;
}

const TYPE_HASHES: Record<SwapVariant, Uint8Array> = {
  swap: typeHash(swapEncodeType('swap')),
  'single-chain': typeHash(swapEncodeType('single-chain')),
};

export function swapTypeHash(variant: SwapVariant): string {
  return bytesToHex(TYPE_HASHES[variant]);
}

/** Validates a raw JSON agreement; ChainInputError INVALID_AGREEMENT names every bad field. */
export function parseSwapAgreement<V extends SwapVariant>(raw: unknown, variant: V): SwapAgreementOf<V> {
  const schema = variant === 'swap' ? swapAgreementSchema : singleChainSwapAgreementSchema;
  return parseOrThrow(schema, raw, 'INVALID_AGREEMENT', 'value') as SwapAgreementOf<V>;
}

export interface SwapDomain {
  name: typeof SWAP_DOMAIN_NAME;
  version: typeof SWAP_DOMAIN_VERSION;
  chainId: bigint;
}

export function swapDomain(chainId: ChainIdInput): SwapDomain {
  return { name: SWAP_DOMAIN_NAME, version: SWAP_DOMAIN_VERSION, chainId: parseChainId(chainId) };
}

// Deployments use a handful of chains; the bound only guards against a caller looping over ids.
const DOMAIN_SEPARATOR_CACHE_LIMIT = 256;
const domainSeparatorCache = new Map<bigint, Uint8Array>();

function cachedSwapDomainSeparator(chainId: bigint): Uint8Array {
  let separator = domainSeparatorCache.get(chainId);
  if (separator === undefined) {
    if (domainSeparatorCache.size >= DOMAIN_SEPARATOR_CACHE_LIMIT) domainSeparatorCache.clear();
    separator = domainSeparator(SWAP_DOMAIN_NAME, SWAP_DOMAIN_VERSION, chainId);
    domainSeparatorCache.set(chainId, separator);
  }
  return separator;
}

export function swapDomainSeparator(chainId: ChainIdInput): string {
  return bytesToHex(cachedSwapDomainSeparator(parseChainId(chainId)));
}

function swapStructHashBytes(
  value: SingleChainSwapAgreement | SwapAgreement,
  variant: SwapVariant,
): Uint8Array {
  const members = membersOf(variant);
  const encoded = new Uint8Array((1 + members.length) * WORD_BYTES);
  const view = new DataView(encoded.buffer);
  encoded.set(TYPE_HASHES[variant], 0);
  const fields = value as Record<string, unknown>;
  members.forEach((name, index) => {
    if (MEMBER_TYPES[name] === 'uint256') writeUintWord(view, index + 1, fields[name] as bigint);
    else writeStringWord(encoded, index + 1, fields[name] as string);
  });
  return keccak256Bytes(encoded);
}

export function swapStructHash<V extends SwapVariant>(value: SwapAgreementOf<V>, variant: V): string {
  return bytesToHex(swapStructHashBytes(value, variant));
}

function swapDigestBytes(
  value: SingleChainSwapAgreement | SwapAgreement,
  chainId: ChainIdInput,
  variant: SwapVariant,
): Uint8Array {
  return typedDataDigest(
    cachedSwapDomainSeparator(parseChainId(chainId)),
    swapStructHashBytes(value, variant),
  );
}

/** The EIP-712 digest the wallet signed, lowercase 0x-hex. */
export function swapDigest<V extends SwapVariant>(
  value: SwapAgreementOf<V>,
  chainId: ChainIdInput,
  variant: V,
): string {
  return bytesToHex(swapDigestBytes(value, chainId, variant));
}

/**
 * Checksummed address whose key signed this agreement under the chain's OtmoicSwap domain.
 * A tampered value recovers a different address (callers compare); a malformed signature throws
 * ChainInputError INVALID_SIGNATURE. `backend` defaults to native libsecp256k1 when it loads.
 */
export function recoverSwapSigner<V extends SwapVariant>(
  value: SwapAgreementOf<V>,
  signature: string | Uint8Array,
  chainId: ChainIdInput,
  variant: V,
  backend?: Secp256k1Backend,
): string {
  return recoverAddressFromDigest(swapDigestBytes(value, chainId, variant), signature, backend);
}
