import fc from 'fast-check';
import { computeAddress, TypedDataEncoder, verifyTypedData } from 'ethers';
import { describe, expect, it } from 'vitest';
import {
  COMPLAINT_ENCODE_TYPE,
  complaintDigest,
  complaintDomain,
  complaintTypedDataTypes,
  parseComplaint,
  recoverComplainant,
} from './complaint-eip712.js';
import {
  chainIdArbitrary,
  eip712StringArbitrary,
  jsonUintArbitrary,
  privateKeyArbitrary,
  serializeSignature,
  signatureFormArbitrary,
} from '../../test/fixtures/eip712-arbitraries.js';
import { ChainInputError } from './errors.js';
import { jsSecp256k1Backend, nativeSecp256k1Backend, type Secp256k1Backend } from './secp256k1-backend.js';

const REPUTATION_CONTRACT = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const OPTIMISM = 10;

// The struct of reputation-contract-evm V2.2 as given in the interoperability spec (section 5).
const SPEC_STRUCT =
  'Complaint(uint64 srcChainId, uint256 srcAddress, string srcToken, uint64 dstChainId, uint256 dstAddress, ' +
  'string dstToken, string srcAmount, string dstAmount, string dstNativeAmount, string requestor, string lpId, ' +
  'uint64 expectedSingleStepTime, uint64 tolerantSingleStepTime, uint64 earliestRefundTime, ' +
  'uint64 agreementReachedTime, string userSign, string lpSign)';

const sdkComplaint = {
  srcChainId: 9006,
  srcAddress: '642829559307850963015472508762062935916233390536',
  srcToken: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
  dstChainId: 60,
  dstAddress: '344073830386746567427978432078835137280280269756',
  dstToken: '0x0000000000000000000000000000000000000000',
  srcAmount: '1000000000000000000',
  dstAmount: '990000000000000000',
  dstNativeAmount: '0',
  requestor: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  lpId: 'lp-test-01',
  expectedSingleStepTime: 60,
  tolerantSingleStepTime: '120',
  earliestRefundTime: 1700000541,
  agreementReachedTime: '1700000000',
  userSign: '0x5a9d…1b',
  lpSign: '0x1aaf…1b',
};

function thrownBy(run: () => unknown): ChainInputError {
  try {
    run();
  } catch (error) {
    if (error instanceof ChainInputError) return error;
    throw new Error(`expected a ChainInputError, got ${String(error)}`);
  }
  throw new Error('expected a ChainInputError, nothing was thrown');
}

describe('Complaint typed data definition', () => {
  it('has the members of the spec, in order, with their types', () => {
    expect(COMPLAINT_ENCODE_TYPE).toBe(SPEC_STRUCT.replaceAll(', ', ','));
    expect(TypedDataEncoder.from(complaintTypedDataTypes()).encodeType('Complaint')).toBe(
      COMPLAINT_ENCODE_TYPE,
    );
  });

  it('has the "Otmoic Reputation" domain with verifyingContract', () => {
    expect(complaintDomain(OPTIMISM, REPUTATION_CONTRACT.toLowerCase())).toEqual({
      name: 'Otmoic Reputation',
      version: '1',
      chainId: 10n,
      verifyingContract: REPUTATION_CONTRACT,
    });
    expect(thrownBy(() => complaintDomain(OPTIMISM, '0x1234')).code).toBe('INVALID_ADDRESS');
    expect(
      thrownBy(() => complaintDigest(parseComplaint(sdkComplaint), OPTIMISM, 'not an address')).code,
    ).toBe('INVALID_ADDRESS');
  });

  it('signs over the contract address and chain: either changes the digest', () => {
    const complaint = parseComplaint(sdkComplaint);
    const digest = complaintDigest(complaint, OPTIMISM, REPUTATION_CONTRACT);
    expect(complaintDigest(complaint, OPTIMISM, REPUTATION_CONTRACT.toLowerCase())).toBe(digest);
    expect(complaintDigest(complaint, OPTIMISM, '0x' + '11'.repeat(20))).not.toBe(digest);
    expect(complaintDigest(complaint, 11155420, REPUTATION_CONTRACT)).not.toBe(digest);
    expect(digest).toBe(
      TypedDataEncoder.hash(
        complaintDomain(OPTIMISM, REPUTATION_CONTRACT),
        complaintTypedDataTypes(),
        sdkComplaint,
      ),
    );
  });
});

describe('complaint schema', () => {
  it('accepts numbers as JSON numbers or decimal strings, addresses as decimal uint256 strings', () => {
    const complaint = parseComplaint(sdkComplaint);
    expect(complaint.srcChainId).toBe(9006n);
    expect(complaint.tolerantSingleStepTime).toBe(120n);
    expect(complaint.agreementReachedTime).toBe(1700000000n);
    expect(complaint.srcAddress).toBe(BigInt('0x70997970C51812dc3A010C7d01b50e0d17dc79C8'));
    expect(complaint.lpId).toBe('lp-test-01');
  });

  it("accepts addresses as the SDK's toHexAddress gives them: an EVM address, 32 bytes of a Solana one", () => {
    const evm = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
    const solana = '0x' + 'Ab'.repeat(32);
    const complaint = parseComplaint({ ...sdkComplaint, srcAddress: evm, dstAddress: solana });
    expect(complaint.srcAddress).toBe(BigInt(evm));
    expect(complaint.dstAddress).toBe(BigInt(solana));
  });

  it.each([
    [
      'srcAddress',
      12345,
      'complaint.srcAddress must be 0x-hex or a decimal integer string (a JSON number cannot hold a uint256)',
    ],
    [
      'srcAddress',
      '0x' + '1'.repeat(65),
      `complaint.srcAddress must be 0x and at most 64 hex digits, or a decimal integer string, got "0x${'1'.repeat(65)}"`,
    ],
    [
      'dstAddress',
      '0xZZ',
      'complaint.dstAddress must be 0x and at most 64 hex digits, or a decimal integer string, got "0xZZ"',
    ],
    ['dstAddress', (1n << 256n).toString(), 'complaint.dstAddress must be below 2^256'],
    ['srcChainId', (1n << 64n).toString(), 'complaint.srcChainId must be below 2^64'],
    ['expectedSingleStepTime', 60.5, 'complaint.expectedSingleStepTime must be an integer, got 60.5'],
    ['earliestRefundTime', -1, 'complaint.earliestRefundTime must not be negative'],
    ['lpId', undefined, 'complaint.lpId is required'],
    ['userSign', 5, 'complaint.userSign must be a string'],
  ])('rejects %s = %s', (field, input, message) => {
    const error = thrownBy(() => parseComplaint({ ...sdkComplaint, [field]: input }));
    expect(error.code).toBe('INVALID_COMPLAINT');
    expect(error.message).toBe(message);
  });
});

const uint64 = jsonUintArbitrary(64);
const uint256AsString = jsonUintArbitrary(256).map(String);
const text = eip712StringArbitrary;
const jsonComplaintArbitrary = fc.record({
  srcChainId: uint64,
  srcAddress: uint256AsString,
  srcToken: text,
  dstChainId: uint64,
  dstAddress: uint256AsString,
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
const contractArbitrary = fc
  .uint8Array({ minLength: 20, maxLength: 20 })
  .map((bytes) => '0x' + Buffer.from(bytes).toString('hex'));

const backends: [string, Secp256k1Backend, number][] = [['js', jsSecp256k1Backend, 150]];
if (nativeSecp256k1Backend) backends.unshift(['native', nativeSecp256k1Backend, 1500]);

describe.each(backends)('recoverComplainant (%s backend)', (_name, backend, numRuns) => {
  it(`equals ethers.verifyTypedData and the signer on ${numRuns} random complaints`, () => {
    fc.assert(
      fc.property(
        jsonComplaintArbitrary,
        chainIdArbitrary,
        contractArbitrary,
        privateKeyArbitrary,
        signatureFormArbitrary,
        (json, chainId, contract, key, form) => {
          const domain = { name: 'Otmoic Reputation', version: '1', chainId, verifyingContract: contract };
          const ethersDigest = TypedDataEncoder.hash(domain, complaintTypedDataTypes(), json);
          const signature = serializeSignature(key.sign(ethersDigest), form);
          const complaint = parseComplaint(json);

          expect(complaintDigest(complaint, chainId, contract)).toBe(ethersDigest);
          const fast = recoverComplainant(complaint, signature, chainId, contract, backend);
          expect(fast).toBe(verifyTypedData(domain, complaintTypedDataTypes(), json, signature));
          expect(fast).toBe(computeAddress(key.publicKey));
        },
      ),
      { numRuns },
    );
  }, 120_000);

  it('refuses a malformed signature with INVALID_SIGNATURE', () => {
    const error = thrownBy(() =>
      recoverComplainant(parseComplaint(sdkComplaint), '0x1234', OPTIMISM, REPUTATION_CONTRACT, backend),
    );
    expect(error.code).toBe('INVALID_SIGNATURE');
  });
});
