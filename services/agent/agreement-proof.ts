/**
 * Does the complaint prove its own agreement? The Classifier judges a complaint invalid (case 0, DESIGN §7)
 * when a member cannot be read, when userSign does not recover its requestor under OtmoicSwap{source chain}, or
 * when lpSign recovers no address owning the LP id's DID under OtmoicSwap{destination chain}. Such a complaint
 * proves nothing and takes the bid's one place on chain, so the Agent does not pay for it. This is the
 * Classifier's reading (shared/otmoic/complaint-agreement.ts, consent.ts) with the Agent's DID source, asked
 * now rather than at the complaint's block time.
 *
 * Only where the deployment watches both of the swap's chains (`[[chainClients]]`, for the EVM chain ids of
 * the OtmoicSwap domains): elsewhere the Classifier cannot judge it either (unknown), and it is filed.
 */
import { readComplaintAgreement } from '../../shared/otmoic/complaint-agreement.js';
import { SignerCandidates, signedBy, versionSigner } from '../../shared/otmoic/consent.js';
import type { DidOwnership } from './did-ownership.js';

export type AgreementProof =
  | { kind: 'proven' }
  /** The Classifier would judge it case 0: the reason, as it would give it. */
  | { kind: 'unproven'; reason: string }
  /** A chain of the swap is not watched here (or no chain is): nothing can be said. */
  | { kind: 'unchecked'; reason: string };

/**
 * `fields`: the complaint's members as stored (numbers in base 10). `evmChainIdOf`: system chain id → EVM chain
 * id of the watched chains. Throws when the DID source cannot be read (the caller answers 503).
 */
export async function agreementProof(
  fields: Readonly<Record<string, string>>,
  evmChainIdOf: (chainId: string) => number | undefined,
  did: Pick<DidOwnership, 'firstOwner'>,
): Promise<AgreementProof> {
  const read = readComplaintAgreement(fields, evmChainIdOf);
  if (read.kind === 'invalid') return { kind: 'unproven', reason: read.reason };
  if (read.kind === 'unwatched') return { kind: 'unchecked', reason: read.reason };
  const { agreement, srcEvmChainId, dstEvmChainId } = read;
  const user = new SignerCandidates(agreement, versionSigner(agreement, agreement.userSign, srcEvmChainId));
  if (!signedBy(user.signers(), agreement.requestor))
    return {
      kind: 'unproven',
      reason: `userSign does not recover the requestor ${agreement.requestor} under OtmoicSwap{chainId ${srcEvmChainId}}`,
    };
  const lp = new SignerCandidates(agreement, versionSigner(agreement, agreement.lpSign, dstEvmChainId));
  if ((await did.firstOwner(agreement.lpId, lp.signers())) === null)
    return {
      kind: 'unproven',
      reason: `lpSign does not recover an address whose DID names include ${agreement.lpId} under OtmoicSwap{chainId ${dstEvmChainId}}`,
    };
  return { kind: 'proven' };
}
