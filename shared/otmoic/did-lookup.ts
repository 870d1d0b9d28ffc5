/**
 * The DID support service's `GET /find/owner/{address}` is the real SDK's route, and nothing says whether it
 * matches addresses with or without their checksum's case. A miss is a decisive empty answer, not an error:
 * the Classifier would take an honest LP's or user's address as owning no DID and blame them. So every
 * caller (Classifier, Points, Agent) asks for an EVM address in its checksummed form (as chain clients and
 * ethers write it) and, when that finds no name, in lower case too. A service that ignores case answers both
 * the same; one that does not finds the address in whichever form it stored.
 */
import { getAddress, isAddress } from 'ethers';
import { z } from 'zod';

const findOwnerAnswer = z.looseObject({
  code: z.unknown().optional(),
  message: z.unknown().optional(),
  data: z.array(z.looseObject({ name: z.string() })),
});

/**
 * The names of a `GET /find/owner/{address}` answer: `{code: 0, data: [{name}]}` (the devnet stand-in's, and
 * what the Agent read), or `{data: [{name}]}` (DESIGN §5). A `code` other than 0 is the service saying it
 * failed, whatever `data` holds (often `[]`): it throws, as for any unreadable answer, so that every caller
 * (Classifier, Agent) takes it for the service being down and never for a decisive "owns no DID", which the
 * Classifier would record and blame on (an LP's signer that owns nothing: case 2 on the user).
 */
export function namesOfFindOwnerAnswer(body: unknown): string[] {
  const answer = findOwnerAnswer.safeParse(body);
  if (!answer.success)
    throw new Error(`DID support answered an unexpected body: ${z.prettifyError(answer.error)}`);
  const { code, message } = answer.data;
  if (code !== undefined && code !== 0)
    throw new Error(
      `DID support answered code ${JSON.stringify(code)}${typeof message === 'string' ? `: ${message.slice(0, 200)}` : ''}`,
    );
  return answer.data.data.map((d) => d.name);
}

/** The forms to ask the DID support service for, in order: checksummed then lower-case (one when equal). */
export function didAddressForms(address: string): string[] {
  if (!isAddress(address)) return [address];
  const checksummed = getAddress(address);
  const lower = checksummed.toLowerCase();
  return checksummed === lower ? [lower] : [checksummed, lower];
}

/** The names `ask` finds under the first form of `address` that has any ([] when no form has one). */
export async function didNamesUnderAnyForm(
  address: string,
  ask: (form: string) => Promise<readonly string[]>,
): Promise<readonly string[]> {
  for (const form of didAddressForms(address)) {
    const names = await ask(form);
    if (names.length > 0) return names;
  }
  return [];
}

/**
 * Whether the DID name `name` (as the DID support service gives it) is `domain`. The real SDK submits a
 * complaint's domain as `name.replace('@', '.')` (the Terminus domain the Reputation contract checks), and an
 * LP id may be written either way: a name matches as it is, or with its first `@` read as `.`.
 */
export function didNameIs(name: string, domain: string): boolean {
  return name === domain || didDomainOf(name) === domain;
}

/**
 * The domain form of a DID name: its first `@` read as `.` (`alice@olares.com` → `alice.olares.com`), as the SDK
 * and the Reputation contract write it. The one form of the two spellings didNameIs takes for one name, so
 * whatever keys a party by its name (Points, an LP id) counts both spellings as one.
 */
export function didDomainOf(name: string): string {
  return name.replace('@', '.');
}

/** Whether one of `names` is `domain` (didNameIs). */
export const didNamesInclude = (names: readonly string[], domain: string): boolean =>
  names.some((name) => didNameIs(name, domain));
