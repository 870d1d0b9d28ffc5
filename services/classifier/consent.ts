/**
 * Consent from signatures (DESIGN §7): who signed an agreement under the OtmoicSwap domain of a chain. Pure
 * crypto, no I/O. A signature that is malformed or recovers nobody proves nothing (null), never an error.
 *
 * Recovery is the costliest step of a judgement, and a swap is judged again at each of its events and clock
 * moves, so results are remembered: per agreement object (the candidates found so far), and per version of the
 * signed message (the signer). The second memo can be saved and loaded (signer-memo.ts): a replay then recovers
 * nothing the live classifier recovered before. Both are caches of a pure function, keyed by everything it reads.
 */
import { createHash } from 'node:crypto';
import { writtenSrcAddress, type Agreement, type MessageVersion } from '../../shared/otmoic/agreement.js';
import { SignerCandidates, signedBy, versionSigner } from '../../shared/otmoic/consent.js';

/**
 * Addresses the signature recovers to (shared/otmoic/consent.ts SignerCandidates), computed as they are asked
 * for and remembered: per agreement object, and per version of the signed message in the memo below.
 */
export function candidateSigners(
  agreement: Agreement,
  signature: string,
  evmChainId: number,
): Generator<string, void, undefined> {
  return candidatesOf(agreement, signature, evmChainId).signers();
}

/** userSign under OtmoicSwap{source chain} recovers `requestor` (compared case-insensitively). */
export function userConsents(agreement: Agreement, userSign: string, srcEvmChainId: number): boolean {
  return signedBy(candidateSigners(agreement, userSign, srcEvmChainId), agreement.requestor);
}

const byAgreement = new WeakMap<Agreement, Map<string, SignerCandidates>>();

function candidatesOf(agreement: Agreement, signature: string, evmChainId: number): SignerCandidates {
  let ofAgreement = byAgreement.get(agreement);
  if (!ofAgreement) byAgreement.set(agreement, (ofAgreement = new Map()));
  const key = `${evmChainId}|${signature}`;
  let found = ofAgreement.get(key);
  if (!found) {
    const recover = versionSigner(agreement, signature, evmChainId);
    // The memo key of the agreement, chain and signature (memoKeyOf), made when a version is first looked up.
    let memoKey: string | undefined;
    found = new SignerCandidates(agreement, (version) => {
      memoKey ??= memoKeyOf(agreement, signature, evmChainId);
      return rememberedSigner(memoKey + versionKey(agreement, version), () => recover(version));
    });
    ofAgreement.set(key, found);
  }
  return found;
}

/** Signers by memo key (see memoKeyOf); null for a signature that recovers nobody. Bounded (see remember). */
const signers = new Map<string, string | null>();
/** About 330 bytes an entry: 2,000,000 take some 660 MB. classifier.signerMemoEntries sets it. */
export const DEFAULT_SIGNER_MEMO_ENTRIES = 2_000_000;
let maxRemembered = DEFAULT_SIGNER_MEMO_ENTRIES;
/** Whether a saved memo was loaded (a replay's): see remember. */
let loaded = false;
/** Recovered since the last takeNewSigners(): what a live classifier saves with its transaction. */
const unsaved: Array<[string, string | null]> = [];

function rememberedSigner(key: string, recover: () => string | null): string | null {
  const known = signers.get(key);
  if (known !== undefined) return known;
  const signer = recover();
  remember(key, signer);
  unsaved.push([key, signer]);
  return signer;
}

/**
 * Format of the memo keys: part of every key, so that a memo saved under another format (or another meaning of
 * the version keys) is never read as this one. Change it whenever versionKey or the members hashed change.
 */
const MEMO_FORMAT = 'otmoic-swap-signer/3';

/** What memoKeyOf leaves out: src_address (in versionKey, as written) and what no Message holds. */
const NOT_HASHED = new Set(['srcAddress', 'srcAddressAlias', 'userSign', 'lpSign']);

/**
 * SHA-256 of the memo format, the chain, the signature and every member of the Message but src_address, by name
 * (each a string or bigint): one hash per agreement and signature, whatever the number of versions tried. Each
 * version's key appends versionKey: the src_address it writes and the casing of the other address members, so
 * two versions share a key exactly when they write the same Message, even of two agreements: a complaint naming
 * the receiver as srcAddress and its TransferOut's alias versions, in whichever order a replay reads them.
 */
export function memoKeyOf(agreement: Agreement, signature: string, evmChainId: number): string {
  const members = Object.entries(agreement)
    .filter(([name]) => !NOT_HASHED.has(name))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, value]) => [name, String(value)]);
  return createHash('sha256')
    .update(JSON.stringify([MEMO_FORMAT, evmChainId, signature, ...members]))
    .digest('base64');
}

/** The src_address a version writes, then the casing of the token members and dst_address (c or l). */
export const versionKey = (agreement: Agreement, { rendering: r, srcAddress }: MessageVersion): string =>
  writtenSrcAddress(agreement, r.srcAddress, srcAddress) +
  (r.srcToken === 'checksum' ? 'c' : 'l') +
  (r.dstAddress === 'checksum' ? 'c' : 'l') +
  (r.dstToken === 'checksum' ? 'c' : 'l');

/**
 * Remembers a signer, unless the memo is full. A live classifier's memo is a cache of what it judges now: full,
 * it is cleared. A loaded one (a replay's) is what spares the replay its recoveries, and most of it is still to
 * be read: it is never cleared, and what no longer fits is not remembered (recovered when needed, the same
 * answer). Clearing it there made a replay whose saved memo passed the bound recover nearly everything again.
 */
function remember(key: string, signer: string | null): boolean {
  if (signers.size >= maxRemembered && !signers.has(key)) {
    if (loaded) return false;
    signers.clear();
  }
  signers.set(key, signer);
  return true;
}

/** Signers recovered since the last call (and forgets that they were new). */
export function takeNewSigners(): Array<[string, string | null]> {
  return unsaved.splice(0);
}

/** At most `max` signers in memory from now on (one memo a process: the classifier's configuration sets it). */
export function boundSignerMemo(max: number): void {
  maxRemembered = max;
}

/** How many signers the memo holds at most. */
export const signerMemoBound = (): number => maxRemembered;

/**
 * The memo as a live classifier saved it (loaded from its memo table), instead of what this process held.
 * Returns how many entries are remembered: all of them, unless there are more than the memo holds.
 */
export function rememberSigners(entries: Iterable<[string, string | null]>): number {
  signers.clear();
  loaded = true;
  let kept = 0;
  for (const [key, signer] of entries) if (remember(key, signer)) kept++;
  return kept;
}

/** Tests: an empty memo, never loaded, of at most `max` entries (one a test can fill); returns the undo of the bound. */
export function freshSignerMemoForTests(max: number): () => void {
  const before = maxRemembered;
  signers.clear();
  unsaved.length = 0;
  loaded = false;
  maxRemembered = max;
  return () => boundSignerMemo(before);
}
