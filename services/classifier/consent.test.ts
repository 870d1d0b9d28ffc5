/**
 * The recovered-signer memo's keys (consent.ts): one hash per agreement, chain and signature, and a tag per
 * version of the Message. A key that missed a member would hand one agreement's signer to another; a tag shared
 * by two versions would hand one version's signer to the other.
 */
import { describe, expect, it } from 'vitest';
import {
  ADDRESS_RENDERINGS,
  messageVersions,
  swapMessage,
  type AddressRendering,
  type Agreement,
  type SrcAddressForm,
} from '../../shared/otmoic/agreement.js';
import { candidateSigners, memoKeyOf, rememberSigners, takeNewSigners, versionTag } from './consent.js';
import { HONEST_SWAP } from './judge-test-kit.js';
import { buildTimeline, DST, LP, SRC, USER } from './swap-timeline.js';

const { agreement } = buildTimeline({ ...HONEST_SWAP, id: 4_242 });
/** The agreement as read from its TransferOut: with a src_address alias, so every one of the 32 versions. */
const aliased: Agreement = { ...agreement, srcAddressAlias: LP.address };

describe('the signer memo keys', () => {
  it('differ whenever a member of the agreement, the chain or the signature differs', () => {
    const key = memoKeyOf(aliased, agreement.userSign, SRC.evm);
    expect(memoKeyOf({ ...aliased }, agreement.userSign, SRC.evm)).toBe(key);
    for (const [name, value] of Object.entries(aliased)) {
      const changed = typeof value === 'bigint' ? value + 1n : `${String(value)}0`;
      expect(memoKeyOf({ ...aliased, [name]: changed }, agreement.userSign, SRC.evm), name).not.toBe(key);
    }
    expect(memoKeyOf(agreement, agreement.userSign, SRC.evm)).not.toBe(key); // without the alias
    expect(memoKeyOf(aliased, agreement.userSign, DST.evm)).not.toBe(key);
    expect(memoKeyOf(aliased, agreement.lpSign, SRC.evm)).not.toBe(key);
  });

  it('tag each version of a Message differently, and an agreement has one version per distinct Message', () => {
    const withLetters = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
    const agreements: Agreement[] = [
      aliased, // the native token on both sides: no letters
      { ...aliased, srcToken: withLetters, dstToken: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512' },
      { ...aliased, srcToken: withLetters.toLowerCase(), dstToken: 'USDT' }, // lower-case, not an address
      { ...agreement, srcToken: withLetters }, // without an alias (a complaint's)
      { ...aliased, srcAddressAlias: '0x0000000000000000000000000000000000000001' }, // an alias without letters
    ];
    const messageOf = (a: Agreement, rendering: AddressRendering, form: SrcAddressForm) =>
      Object.values(swapMessage(a, rendering, form))
        .map(String)
        .join('|');
    const counts = agreements.map((a) => {
      const versions = messageVersions(a);
      expect(new Set(versions.map(versionTag)).size).toBe(versions.length);
      const tried = versions.map((v) => messageOf(a, v.rendering, v.srcAddress));
      const forms = a.srcAddressAlias === undefined ? (['own'] as const) : (['own', 'alias'] as const);
      const every = ADDRESS_RENDERINGS.flatMap((r) => forms.map((form) => messageOf(a, r, form)));
      // Every distinct Message once, in the order of the first version that writes it.
      expect(tried).toEqual([...new Set(every)]);
      return versions.length;
    });
    expect(counts).toEqual([8, 32, 8, 8, 6]);
  });

  it('are the ones a later judgement reads: a memo loaded from a save is used, not recovered again', () => {
    takeNewSigners();
    const first = [...candidateSigners({ ...agreement }, agreement.userSign, SRC.evm)];
    expect(first[0]).toBe(USER.address.toLowerCase());
    const saved = takeNewSigners();
    expect(saved.length).toBeGreaterThan(0);
    // The same agreement read again (another object, as in a replay), its memo loaded with another signer: a
    // recovery would give the user back, so the planted signer proves the saved key is the one looked up.
    const planted = '0x000000000000000000000000000000000000beef';
    rememberSigners(saved.map(([key]) => [key, planted]));
    expect([...candidateSigners({ ...agreement }, agreement.userSign, SRC.evm)]).toEqual([planted]);
    expect(takeNewSigners()).toEqual([]);
    // Under another chain's domain the key differs: recovered, not read from the memo.
    expect([...candidateSigners({ ...agreement }, agreement.userSign, DST.evm)]).not.toContain(planted);
  });
});
