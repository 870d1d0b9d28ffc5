/**
 * The "Otmoic Reputation" complaint (reputation-contract-evm V2.2): EIP-712 domain
 * `{name: "Otmoic Reputation", version: "1", chainId, verifyingContract}`, primary type `Complaint`.
 * The complainant signs it; the contract checks that the signer owns the Terminus DID it names.
 * Same fast path as the swap message: hand-laid words, WASM keccak, libsecp256k1.
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
import { parseEvmAddress } from './evm-address.js';
import { bytesToHex } from './hex.js';
import { keccak256Bytes } from './keccak.js';
import { recoverAddressFromDigest } from './recover-address.js';
import { parseOrThrow } from './schema-errors.js';
import type { Secp256k1Backend } from './secp256k1-backend.js';
import { eip712StringField } from './string-field.js';
import { toUnsignedInteger, unsignedIntegerField } from './unsigned-integer.js';

export const COMPLAINT_DOMAIN_NAME = 'Otmoic Reputation';
export const COMPLAINT_DOMAIN_VERSION = '1';
export const COMPLAINT_PRIMARY_TYPE = 'Complaint';

const uint64 = unsignedIntegerField(64);
const text = eip712StringField();

/** 0x and 1 to 64 hex digits, any case: an EVM address, or the 32 bytes of a Solana one. */
const HEX_UINT256 = /^0x[0-9a-fA-F]{1,64}$/;

/**
 * uint256 holding an address. The SDK sends `toHexAddress(address)`: the EVM address itself, or 0x and the 32
 * bytes of a Solana address, signed as is by ethers' signTypedData (which takes hex for a uint256). A decimal
 * string is taken too; a JSON number never (it would be rounded).
 */
const uint256Address = z.unknown().transform((input, ctx): bigint => {
  if (typeof input === 'string' && HEX_UINT256.test(input)) return BigInt(input);
  if (typeof input === 'number') {
    ctx.addIssue({
      code: 'custom',
      message: 'must be 0x-hex or a decimal integer string (a JSON number cannot hold a uint256)',
    });
    return z.NEVER;
  }
  const result = toUnsignedInteger(input, 256);
  if (typeof result === 'bigint') return result;
  ctx.addIssue({
    code: 'custom',
    message:
      typeof input === 'string' && !/^[0-9]+$/.test(input)
        ? `must be 0x and at most 64 hex digits, or a decimal integer string, got ${JSON.stringify(input.slice(0, 80))}`
        : result.error,
  });
  return z.NEVER;
});

/** The Complaint struct as the SDK sends it; keys in the signed member order. */
export const complaintSchema = z.object({
  srcChainId: uint64,
  srcAddress: uint256Address,
  srcToken: text,
  dstChainId: uint64,
  dstAddress: uint256Address,
  dstToken: text,
  srcAmount: text,
  dstAmount: text,
  dstNativeAmount: text,
  requestor: text,
  lpId: text,
  expectedSingleStepTime: uint64,
  tolerantSingleStepTime: uint64,
  earliestRefundTime: uint64,
  agreementReachedTime: uint64,
  userSign: text,
  lpSign: text,
});

export type Complaint = z.output<typeof complaintSchema>;

const MEMBER_TYPES: Record<keyof Complaint, 'uint64' | 'uint256' | 'string'> = {
  srcChainId: 'uint64',
  srcAddress: 'uint256',
  srcToken: 'string',
  dstChainId: 'uint64',
  dstAddress: 'uint256',
  dstToken: 'string',
  srcAmount: 'string',
  dstAmount: 'string',
  dstNativeAmount: 'string',
  requestor: 'string',
  lpId: 'string',
  expectedSingleStepTime: 'uint64',
  tolerantSingleStepTime: 'uint64',
  earliestRefundTime: 'uint64',
  agreementReachedTime: 'uint64',
  userSign: 'string',
  lpSign: 'string',
};

const MEMBERS = Object.keys(complaintSchema.shape) as (keyof Complaint)[];

export function complaintTypedDataTypes(): Record<string, TypedDataField[]> {
  return { [COMPLAINT_PRIMARY_TYPE]: MEMBERS.map((name) => ({ name, type: MEMBER_TYPES[name] })) };
}

export const COMPLAINT_ENCODE_TYPE = `${COMPLAINT_PRIMARY_TYPE}(${MEMBERS.map((name) => `${MEMBER_TYPES[name]} ${name}`).join(',')})`;
const COMPLAINT_TYPE_HASH = typeHash(COMPLAINT_ENCODE_TYPE);

/** Validates a raw JSON complaint; ChainInputError INVALID_COMPLAINT names every bad field. */
export function parseComplaint(raw: unknown): Complaint {
  return parseOrThrow(complaintSchema, raw, 'INVALID_COMPLAINT', 'complaint');
}

export interface ComplaintDomain {
  name: typeof COMPLAINT_DOMAIN_NAME;
  version: typeof COMPLAINT_DOMAIN_VERSION;
  chainId: bigint;
  verifyingContract: string;
}

export function complaintDomain(chainId: ChainIdInput, contractAddr: string): ComplaintDomain {
  return {
    name: COMPLAINT_DOMAIN_NAME,
    version: COMPLAINT_DOMAIN_VERSION,
    chainId: parseChainId(chainId),
    verifyingContract: parseEvmAddress(contractAddr, 'verifyingContract'),
  };
}

const DOMAIN_SEPARATOR_CACHE_LIMIT = 256;
const domainSeparatorCache = new Map<string, Uint8Array>();

function cachedComplaintDomainSeparator(chainId: ChainIdInput, contractAddr: string): Uint8Array {
  const cacheKey = `${String(chainId)}:${contractAddr}`;
  let separator = domainSeparatorCache.get(cacheKey);
  if (separator === undefined) {
    const domain = complaintDomain(chainId, contractAddr);
    if (domainSeparatorCache.size >= DOMAIN_SEPARATOR_CACHE_LIMIT) domainSeparatorCache.clear();
    separator = domainSeparator(
      domain.name,
      domain.version,
      domain.chainId,
      Buffer.from(domain.verifyingContract.slice(2), 'hex'),
    );
    domainSeparatorCache.set(cacheKey, separator);
  }
  return separator;
}

function complaintStructHashBytes(complaint: Complaint): Uint8Array {
  const encoded = new Uint8Array((1 + MEMBERS.length) * WORD_BYTES);
  const view = new DataView(encoded.buffer);
  encoded.set(COMPLAINT_TYPE_HASH, 0);
  MEMBERS.forEach((name, index) => {
    const value = complaint[name];
    if (MEMBER_TYPES[name] === 'string') writeStringWord(encoded, index + 1, value as string);
    else writeUintWord(view, index + 1, value as bigint);
  });
  return keccak256Bytes(encoded);
}

export function complaintDigest(complaint: Complaint, chainId: ChainIdInput, contractAddr: string): string {
  return bytesToHex(
    typedDataDigest(
      cachedComplaintDomainSeparator(chainId, contractAddr),
      complaintStructHashBytes(complaint),
    ),
  );
}

/**
 * Checksummed address of the complainant's key. The caller must still check that it owns the
 * claimed DID and is the swap's user or LP. Malformed signature: ChainInputError INVALID_SIGNATURE.
 */
export function recoverComplainant(
  complaint: Complaint,
  signature: string | Uint8Array,
  chainId: ChainIdInput,
  contractAddr: string,
  backend?: Secp256k1Backend,
): string {
  const digest = typedDataDigest(
    cachedComplaintDomainSeparator(chainId, contractAddr),
    complaintStructHashBytes(complaint),
  );
  return recoverAddressFromDigest(digest, signature, backend);
}
