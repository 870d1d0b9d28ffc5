// Files a complaint on a devnet's Reputation contract as the SDK and the Agent would: the DID domain gets an
// owner, the complainant signs the "Otmoic Reputation" EIP-712 Complaint, a payer account submits it.
import { Contract, type TransactionReceipt } from 'ethers';
import { bidId, complaintDomain, complaintTypedDataTypes, parseComplaint } from '../chain/index.js';
import { OTMOIC_REPUTATION_ABI } from '../otmoic/abi.js';
import { complaintOfAgreement, type SignedAgreement } from '../otmoic/agreement.js';
import type { DevnetChain } from './devnet.js';

export interface ComplaintFields {
  srcChainId: number;
  srcAddress: bigint;
  srcToken: string;
  dstChainId: number;
  dstAddress: bigint;
  dstToken: string;
  srcAmount: string;
  dstAmount: string;
  dstNativeAmount: string;
  requestor: string;
  lpId: string;
  expectedSingleStepTime: number;
  tolerantSingleStepTime: number;
  earliestRefundTime: number;
  agreementReachedTime: number;
  userSign: string;
  lpSign: string;
}

/** The Complaint of a signed agreement in the contract's argument types (what fileComplaint takes). */
export function complaintFieldsOf(agreement: SignedAgreement): ComplaintFields {
  const c = complaintOfAgreement(agreement);
  return {
    ...c,
    srcChainId: Number(c.srcChainId),
    srcAddress: BigInt(c.srcAddress),
    dstChainId: Number(c.dstChainId),
    dstAddress: BigInt(c.dstAddress),
    expectedSingleStepTime: Number(c.expectedSingleStepTime),
    tolerantSingleStepTime: Number(c.tolerantSingleStepTime),
    earliestRefundTime: Number(c.earliestRefundTime),
    agreementReachedTime: Number(c.agreementReachedTime),
  };
}

export interface FiledComplaint {
  bidId: string;
  signature: string;
  receipt: TransactionReceipt;
}

export async function fileComplaint(
  chain: DevnetChain,
  complaint: ComplaintFields,
  options: { complainant: number; domain: string; payer?: number },
): Promise<FiledComplaint> {
  const owner = new Contract(
    chain.contracts.reputation,
    ['function setDomainOwner(string domain, address owner)'],
    chain.wallet(0),
  );
  await (
    await owner.getFunction('setDomainOwner')(options.domain, chain.accounts[options.complainant]!.address)
  ).wait();
  const signature = await chain
    .wallet(options.complainant)
    .signTypedData(
      complaintDomain(chain.chainId, chain.contracts.reputation),
      complaintTypedDataTypes(),
      complaint,
    );
  const reputation = new Contract(
    chain.contracts.reputation,
    OTMOIC_REPUTATION_ABI as unknown as string[],
    chain.wallet(options.payer ?? 0),
  );
  const tx = await reputation.getFunction('submitComplaint')(complaint, signature, options.domain);
  const receipt = (await tx.wait()) as TransactionReceipt;
  return {
    // The complaint as the SDK sends it (uint256 addresses as decimal strings), through our own parser.
    bidId: bidId(
      parseComplaint({
        ...complaint,
        srcAddress: complaint.srcAddress.toString(),
        dstAddress: complaint.dstAddress.toString(),
      }),
    ),
    signature,
    receipt,
  };
}
