// Genuine swap agreements for the devnet: the user and the LP sign the OtmoicSwap Message with their own keys
// (the user under the source chain's EVM id, the LP under the destination's), and the bidId is the §5 rule
// over the Complaint form of the signed agreement, as the LP node computes it.
import { Contract, SigningKey } from 'ethers';
import { bidId, parseComplaint, swapDigest } from '../chain/index.js';
import {
  complaintOfAgreement,
  swapMessage,
  type Agreement,
  type SignedAgreement,
} from '../otmoic/agreement.js';
import type { DevnetChain } from './devnet.js';

/** Signs the agreement as both parties would; returns it with userSign and lpSign. */
export function signAgreement(
  agreement: Agreement,
  keys: { userKey: string; lpKey: string },
  chains: { srcEvmChainId: number; dstEvmChainId: number },
): SignedAgreement {
  const message = swapMessage(agreement);
  const sign = (key: string, evmChainId: number) =>
    new SigningKey(key).sign(swapDigest(message, evmChainId, 'swap')).serialized;
  return {
    ...agreement,
    userSign: sign(keys.userKey, chains.srcEvmChainId),
    lpSign: sign(keys.lpKey, chains.dstEvmChainId),
  };
}

/** The swap's bidId: keccak256 of the §5 concatenation of the Complaint form of the signed agreement. */
export function bidIdOf(agreement: SignedAgreement): string {
  return bidId(parseComplaint(complaintOfAgreement(agreement)));
}

/** The devnet's DID name of a user account (the LP's is its lpId). */
export const userDid = (address: string): string => `user-${address.slice(2, 10).toLowerCase()}.devnet`;
export const lpIdOf = (address: string): string => `lp-${address.slice(2, 10).toLowerCase()}`;

const REGISTRY_ABI = [
  'function setDomainOwner(string domain, address owner)',
  'function ownerOfDomain(string domain) view returns (address)',
];

/**
 * Registers DID domains in the devnet's DID registry (the Reputation contract of `chain`; its owner, account
 * 0, sends). A domain that already has this owner costs nothing.
 */
export async function registerDids(
  chain: DevnetChain,
  owners: Readonly<Record<string, string>>,
): Promise<void> {
  const registry = new Contract(chain.contracts.reputation, REGISTRY_ABI, chain.wallet(0));
  for (const [domain, owner] of Object.entries(owners)) {
    const current = (await registry.getFunction('ownerOfDomain')(domain)) as string;
    if (current.toLowerCase() === owner.toLowerCase()) continue;
    await (await registry.getFunction('setDomainOwner')(domain, owner)).wait();
  }
}
