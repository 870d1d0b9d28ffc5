/**
 * Is the complainant the swap's user or its LP? The contract takes a complaint from any DID owner and only one
 * per bid (spec/otmoic.md §5), so a stranger's complaint costs the Agent's gas, can only be judged invalid (case
 * 0, DESIGN §7) and takes the bid's one place from the party's own. Asked after the signer was found to own
 * the complainant domain, with what the Agent can know without the swap's chains:
 * - the user: the signer is the complaint's `requestor` (a domain has one owner, so the domain is among the
 *   requestor's DID names exactly when the requestor is its owner: the Classifier's test);
 * - the LP: the domain is the LP id (as it is, or as the SDK writes a name `a@b`: `a.b`), or the signer owns
 *   the LP id (then it is the LP's key, whose DID names the Classifier reads for the domain).
 * The signatures inside the complaint (userSign, lpSign) are checked after this (agreement-proof.ts).
 */
import { getAddress } from 'ethers';
import { didNameIs } from '../../shared/otmoic/did-lookup.js';
import type { ParsedComplaint } from './complaint-body.js';
import type { DidOwnership } from './did-ownership.js';

export type ComplainantParty = 'user' | 'lp';

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** The party the complainant is, or null; throws when the DID source cannot be read (asked last, if at all). */
export async function complainantParty(
  parsed: Pick<ParsedComplaint, 'complaint' | 'domain' | 'signer'>,
  did: DidOwnership,
): Promise<ComplainantParty | null> {
  const { requestor, lpId } = parsed.complaint;
  if (EVM_ADDRESS.test(requestor) && getAddress(requestor.toLowerCase()) === getAddress(parsed.signer))
    return 'user';
  if (didNameIs(lpId, parsed.domain)) return 'lp';
  return (await did.check(lpId, parsed.signer)).owns ? 'lp' : null;
}
