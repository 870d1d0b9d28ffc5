// Reputation against a real Hardhat chain: the §5 bidId rule (independent TypeScript computation),
// the EIP-712 complaint signature, one complaint per bid, and the DID-owner checks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contract, Signature, keccak256, toUtf8Bytes } from 'ethers';
import type { TypedDataDomain } from 'ethers';
import { compileContracts } from './compile.js';
import type { CompiledContracts } from './compile.js';
import { startDevnet } from '../shared/devnet/devnet.js';
import type { Devnet, DevnetChain } from '../shared/devnet/devnet.js';
import { decodeRevert } from '../shared/devnet/revert-error.js';
import type { ComplaintFields } from '../shared/devnet/complaints.js';

const CHAIN_ID = 11155420;
const OWNER = 0;
const COMPLAINANT = 2;
const OTHER = 4;
const AGENT = 6;

/** The struct as ethers encodes it (uint256 addresses as bigint). */
type Complaint = ComplaintFields;

const COMPLAINT_TYPES = {
  Complaint: [
    { name: 'srcChainId', type: 'uint64' },
    { name: 'srcAddress', type: 'uint256' },
    { name: 'srcToken', type: 'string' },
    { name: 'dstChainId', type: 'uint64' },
    { name: 'dstAddress', type: 'uint256' },
    { name: 'dstToken', type: 'string' },
    { name: 'srcAmount', type: 'string' },
    { name: 'dstAmount', type: 'string' },
    { name: 'dstNativeAmount', type: 'string' },
    { name: 'requestor', type: 'string' },
    { name: 'lpId', type: 'string' },
    { name: 'expectedSingleStepTime', type: 'uint64' },
    { name: 'tolerantSingleStepTime', type: 'uint64' },
    { name: 'earliestRefundTime', type: 'uint64' },
    { name: 'agreementReachedTime', type: 'uint64' },
    { name: 'userSign', type: 'string' },
    { name: 'lpSign', type: 'string' },
  ],
};

/** §5: keccak256(utf8(T ‖ srcChainId ‖ dec(srcAddress) ‖ srcToken ‖ dstChainId ‖ dec(dstAddress) ‖ dstToken ‖ srcAmount ‖ dstAmount ‖ dstNativeAmount ‖ requestor ‖ lpId ‖ E ‖ Tol ‖ R ‖ userSign ‖ lpSign)). */
function expectedBidId(c: Complaint): string {
  const text = [
    c.agreementReachedTime.toString(10),
    c.srcChainId.toString(10),
    c.srcAddress.toString(10),
    c.srcToken,
    c.dstChainId.toString(10),
    c.dstAddress.toString(10),
    c.dstToken,
    c.srcAmount,
    c.dstAmount,
    c.dstNativeAmount,
    c.requestor,
    c.lpId,
    c.expectedSingleStepTime.toString(10),
    c.tolerantSingleStepTime.toString(10),
    c.earliestRefundTime.toString(10),
    c.userSign,
    c.lpSign,
  ].join('');
  return keccak256(toUtf8Bytes(text));
}

function sampleComplaint(overrides: Partial<Complaint> = {}): Complaint {
  return {
    srcChainId: 9006,
    srcAddress: BigInt('0x70997970C51812dc3A010C7d01b50e0d17dc79C8'),
    srcToken: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
    dstChainId: 614,
    dstAddress: BigInt('0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'),
    dstToken: '0x0000000000000000000000000000000000000000',
    srcAmount: '1000000000000000000',
    dstAmount: '990000000000000000',
    dstNativeAmount: '0',
    requestor: 'did:requestor',
    lpId: 'lp-test-01',
    expectedSingleStepTime: 60,
    tolerantSingleStepTime: 120,
    earliestRefundTime: 1700000541,
    agreementReachedTime: 1700000000,
    userSign: '0xuserSign',
    lpSign: '0xlpSign',
    ...overrides,
  };
}

let devnet: Devnet;
let chain: DevnetChain;
let compiled: CompiledContracts;
let domain: TypedDataDomain;

beforeAll(async () => {
  compiled = await compileContracts();
  devnet = await startDevnet({ chains: [{ chainId: CHAIN_ID }], compiled });
  chain = devnet.chain(CHAIN_ID);
  domain = {
    name: 'Otmoic Reputation',
    version: '1',
    chainId: CHAIN_ID,
    verifyingContract: chain.contracts.reputation,
  };
  const owner = reputationAs(OWNER);
  await (
    await owner.getFunction('setDomainOwner')('alice.otmoic', chain.accounts[COMPLAINANT]!.address)
  ).wait();
  await (await owner.getFunction('setDomainOwner')('bob.otmoic', chain.accounts[OTHER]!.address)).wait();
});

afterAll(async () => {
  await devnet?.stop();
});

function reputationAs(account: number): Contract {
  return new Contract(chain.contracts.reputation, compiled.Reputation.abi, chain.wallet(account));
}

/** Submits through the Agent's wallet; "ok" or the decoded custom error. */
async function submit(complaint: Complaint, signature: string, didDomain: string): Promise<string> {
  const agent = reputationAs(AGENT);
  try {
    await (await agent.getFunction('submitComplaint')(complaint, signature, didDomain)).wait();
    return 'ok';
  } catch (error) {
    const revert = decodeRevert(error, agent.interface);
    if (revert === undefined) throw error;
    return `${revert.name}(${revert.args.map(String).join(',')})`;
  }
}

describe('bidId (§5)', () => {
  const cases: [string, Partial<Complaint>][] = [
    ['sample complaint', {}],
    ['uint256 addresses at full width and zero', { srcAddress: 2n ** 256n - 1n, dstAddress: 0n }],
    [
      'empty strings and zero numbers',
      { srcToken: '', requestor: '', userSign: '', lpSign: '', srcChainId: 0, agreementReachedTime: 0 },
    ],
    ['non-ASCII text is hashed as UTF-8', { requestor: 'did:ünïcødé:用户', lpId: 'lp-🚀' }],
    ['large numbers (2^53 - 1)', { earliestRefundTime: Number.MAX_SAFE_INTEGER, dstChainId: 11155420 }],
  ];
  for (const [name, overrides] of cases) {
    it(`getBidId equals the TypeScript rule: ${name}`, async () => {
      const complaint = sampleComplaint(overrides);
      expect(await reputationAs(OWNER).getFunction('getBidId')(complaint)).toBe(expectedBidId(complaint));
    });
  }

  it('has no separators, so it depends on how fields are split (as the original does)', () => {
    const a = sampleComplaint({ srcAmount: '12', dstAmount: '3' });
    const b = sampleComplaint({ srcAmount: '1', dstAmount: '23' });
    expect(expectedBidId(a)).toBe(expectedBidId(b));
  });
});

describe('submitComplaint', () => {
  it('accepts a complaint signed (EIP-712) by the owner of the DID domain and records it once', async () => {
    const complaint = sampleComplaint({ lpId: 'lp-accept' });
    const signature = await chain.wallet(COMPLAINANT).signTypedData(domain, COMPLAINT_TYPES, complaint);
    const bidId = expectedBidId(complaint);
    const reader = reputationAs(OWNER);
    expect(await reader.getFunction('hasComplaint')(bidId)).toBe(false);

    const receipt = await (
      await reputationAs(AGENT).getFunction('submitComplaint')(complaint, signature, 'alice.otmoic')
    ).wait();
    const event = reader.interface.parseLog(receipt!.logs[0]!)!;
    expect(event.name).toBe('SubmitComplaint');
    expect(event.args[0]).toBe(bidId);
    expect(event.args[1].toObject()).toEqual({
      ...complaint,
      srcChainId: BigInt(complaint.srcChainId),
      dstChainId: BigInt(complaint.dstChainId),
      expectedSingleStepTime: BigInt(complaint.expectedSingleStepTime),
      tolerantSingleStepTime: BigInt(complaint.tolerantSingleStepTime),
      earliestRefundTime: BigInt(complaint.earliestRefundTime),
      agreementReachedTime: BigInt(complaint.agreementReachedTime),
    });
    expect(event.args[2]).toBe('alice.otmoic');
    expect(await reader.getFunction('hasComplaint')(bidId)).toBe(true);

    expect(await submit(complaint, signature, 'alice.otmoic')).toBe(`DuplicateBidId(${bidId})`);
  });

  it('accepts 64-byte EIP-2098 and v in {0,1} signatures', async () => {
    const compact = sampleComplaint({ lpId: 'lp-compact' });
    const sig1 = Signature.from(
      await chain.wallet(COMPLAINANT).signTypedData(domain, COMPLAINT_TYPES, compact),
    );
    expect(await submit(compact, sig1.compactSerialized, 'alice.otmoic')).toBe('ok');

    const lowV = sampleComplaint({ lpId: 'lp-low-v' });
    const sig2 = Signature.from(await chain.wallet(COMPLAINANT).signTypedData(domain, COMPLAINT_TYPES, lowV));
    const withLowV = sig2.r + sig2.s.slice(2) + (sig2.v - 27).toString(16).padStart(2, '0');
    expect(await submit(lowV, withLowV, 'alice.otmoic')).toBe('ok');
  });

  it('an unknown domain: DomainNoExists()', async () => {
    const complaint = sampleComplaint({ lpId: 'lp-no-domain' });
    const signature = await chain.wallet(COMPLAINANT).signTypedData(domain, COMPLAINT_TYPES, complaint);
    expect(await submit(complaint, signature, 'nobody.otmoic')).toBe('DomainNoExists()');
  });

  it("someone else's domain: InvalidSigner(signer, domainOwner)", async () => {
    const complaint = sampleComplaint({ lpId: 'lp-other-domain' });
    const signature = await chain.wallet(COMPLAINANT).signTypedData(domain, COMPLAINT_TYPES, complaint);
    const signer = chain.accounts[COMPLAINANT]!.address;
    const bob = chain.accounts[OTHER]!.address;
    expect(await submit(complaint, signature, 'bob.otmoic')).toBe(`InvalidSigner(${signer},${bob})`);
  });

  it('a tampered complaint or a signature for another chain recovers another address: InvalidSigner', async () => {
    const complaint = sampleComplaint({ lpId: 'lp-tampered' });
    const alice = chain.accounts[COMPLAINANT]!.address;
    const signature = await chain.wallet(COMPLAINANT).signTypedData(domain, COMPLAINT_TYPES, complaint);
    const tampered = { ...complaint, dstAmount: '1' };
    expect(await submit(tampered, signature, 'alice.otmoic')).toMatch(
      new RegExp(`^InvalidSigner\\(0x[0-9a-fA-F]{40},${alice}\\)$`),
    );

    const otherChain = await chain
      .wallet(COMPLAINANT)
      .signTypedData({ ...domain, chainId: 10 }, COMPLAINT_TYPES, complaint);
    expect(await submit(complaint, otherChain, 'alice.otmoic')).not.toBe('ok');
    // The failed attempts did not use up the bid: the genuine complaint still goes through.
    expect(await submit(complaint, signature, 'alice.otmoic')).toBe('ok');
  });

  it('a malformed signature recovers nobody: InvalidSigner(0x0, owner)', async () => {
    const complaint = sampleComplaint({ lpId: 'lp-garbage' });
    const alice = chain.accounts[COMPLAINANT]!.address;
    expect(await submit(complaint, '0x1234', 'alice.otmoic')).toBe(
      `InvalidSigner(0x0000000000000000000000000000000000000000,${alice})`,
    );
  });

  it('only the owner manages DID domains', async () => {
    const stranger = reputationAs(OTHER);
    try {
      await (
        await stranger.getFunction('setDomainOwner')('mallory.otmoic', chain.accounts[OTHER]!.address)
      ).wait();
      expect.unreachable('setDomainOwner by a stranger must revert');
    } catch (error) {
      expect(decodeRevert(error, stranger.interface)?.name).toBe('NotOwner');
    }
    expect(await stranger.getFunction('ownerOfDomain')('mallory.otmoic')).toBe(
      '0x0000000000000000000000000000000000000000',
    );
  });
});
