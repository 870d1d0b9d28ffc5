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
  type MessageVersion,
  type SrcAddressForm,
} from '../../shared/otmoic/agreement.js';
import {
  candidateSigners,
  freshSignerMemoForTests,
  memoKeyOf,
  rememberSigners,
  takeNewSigners,
  versionKey,
} from './consent.js';
import { HONEST_SWAP } from './judge-test-kit.js';
import { buildTimeline, DST, LP, SRC, USER } from './swap-timeline.js';

const { agreement } = buildTimeline({ ...HONEST_SWAP, id: 4_242 });
/** The agreement as read from its TransferOut: with a src_address alias, so every one of the 32 versions. */
const aliased: Agreement = { ...agreement, srcAddressAlias: LP.address };

describe('the signer memo keys', () => {
  const messageOf = (a: Agreement, rendering: AddressRendering, form: SrcAddressForm) =>
    Object.values(swapMessage(a, rendering, form))
      .map(String)
      .join('|');
  const keyOf = (a: Agreement, version: MessageVersion, signature = agreement.userSign, evm = SRC.evm) =>
    memoKeyOf(a, signature, evm) + versionKey(a, version);

  it('are the same for two versions exactly when they write the same Message, whatever their agreements', () => {
    // Every member changed in turn, and agreements as a complaint (no alias, srcAddress as written there) has them.
    const variants: Agreement[] = [aliased, agreement, { ...agreement, srcAddress: LP.address }];
    for (const [name, value] of Object.entries(aliased)) {
      if (name === 'userSign' || name === 'lpSign') continue; // in no Message
      const changed = typeof value === 'bigint' ? value + 1n : `${String(value)}0`;
      variants.push({ ...aliased, [name]: changed });
    }
    const versions = variants.flatMap((a) => messageVersions(a).map((v) => ({ a, v })));
    const keys = new Map<string, string>();
    for (const { a, v } of versions) {
      const key = keyOf(a, v);
      const message = messageOf(a, v.rendering, v.srcAddress);
      // One key for one Message: a key shared by two Messages would hand one's signer to the other.
      expect(keys.get(key) ?? message).toBe(message);
      keys.set(key, message);
    }
    expect(new Set(keys.values()).size).toBe(keys.size);
    // A complaint naming the receiver (as the SDK does) and its TransferOut's alias version: one memo entry.
    const complaintOwn = keyOf({ ...agreement, srcAddress: LP.address }, messageVersions(agreement)[0]!);
    const aliasVersion = messageVersions(aliased).find((v) => v.srcAddress === 'alias')!;
    expect(keyOf(aliased, aliasVersion)).toBe(complaintOwn);
    // The chain and the signature are part of every key.
    const first = messageVersions(aliased)[0]!;
    expect(keyOf(aliased, first, agreement.userSign, DST.evm)).not.toBe(keyOf(aliased, first));
    expect(keyOf(aliased, first, agreement.lpSign)).not.toBe(keyOf(aliased, first));
  });

  it('stay the ones saved memos hold (otmoic-swap-signer/3): a change must change the format too', () => {
    // Computed once and written here. Keys that drift silently leave every saved memo unread: each replay then
    // recovers every signature again, and nothing but its time says so. Change MEMO_FORMAT with the keys.
    const fixed: Agreement = {
      srcChainId: 97n,
      srcAddress: '0x1111111111111111111111111111111111111111',
      srcAddressAlias: '0x2222222222222222222222222222222222222222',
      srcToken: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
      srcAmount: '1000000000000000000',
      dstChainId: 614n,
      dstAddress: '0x3333333333333333333333333333333333333333',
      dstToken: '0x0000000000000000000000000000000000000000',
      dstAmount: '2500000',
      dstNativeAmount: '0',
      requestor: '0x1111111111111111111111111111111111111111',
      lpId: 'lp-golden',
      agreementReachedTime: 1700000000n,
      expectedSingleStepTime: 60n,
      tolerantSingleStepTime: 120n,
      earliestRefundTime: 1700003600n,
    };
    expect(memoKeyOf(fixed, `0x${'1b'.repeat(65)}`, 97)).toBe('3fFnR2JdN+rG5y+fWvKnlEo1qYBN3t7gVvmAwr2T/LI=');
    expect(messageVersions(fixed).map((v) => versionKey(fixed, v))).toEqual([
      '0x1111111111111111111111111111111111111111ccc',
      '0x2222222222222222222222222222222222222222ccc',
      '0x1111111111111111111111111111111111111111lll',
      '0x2222222222222222222222222222222222222222lll',
    ]);
  });

  it('an agreement has one version per distinct Message, in the order of the first that writes it', () => {
    const withLetters = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
    const agreements: Agreement[] = [
      aliased, // the native token on both sides: no letters
      { ...aliased, srcToken: withLetters, dstToken: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512' },
      { ...aliased, srcToken: withLetters.toLowerCase(), dstToken: 'USDT' }, // lower-case, not an address
      { ...agreement, srcToken: withLetters }, // without an alias (a complaint's)
      { ...aliased, srcAddressAlias: '0x0000000000000000000000000000000000000001' }, // an alias without letters
    ];
    const counts = agreements.map((a) => {
      const versions = messageVersions(a);
      const tried = versions.map((v) => messageOf(a, v.rendering, v.srcAddress));
      const forms = a.srcAddressAlias === undefined ? (['own'] as const) : (['own', 'alias'] as const);
      const every = ADDRESS_RENDERINGS.flatMap((r) => forms.map((form) => messageOf(a, r, form)));
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

describe('the signer memo bound', () => {
  const agreements = [1, 2, 3].map((n) => buildTimeline({ ...HONEST_SWAP, id: 5_000 + n }).agreement);
  /** The first candidate of userSign, read from another object each time (as a replay reads its events). */
  const firstSigner = (a: (typeof agreements)[number]) =>
    candidateSigners({ ...a }, a.userSign, SRC.evm).next().value;
  const user = USER.address.toLowerCase();
  const planted = '0x000000000000000000000000000000000000beef';

  it('a live memo is cleared when full; a loaded one keeps what it loaded, and leaves out what does not fit', () => {
    const undo = freshSignerMemoForTests(2);
    try {
      // Live: the third recovery finds the memo full and clears it, so the first is recovered again.
      for (const a of agreements) expect(firstSigner(a)).toBe(user);
      const saved = takeNewSigners();
      expect(saved).toHaveLength(3);
      expect(firstSigner(agreements[0]!)).toBe(user);
      expect(takeNewSigners()).toHaveLength(1);

      // Loaded (planted signers prove what is read from it): two of the three fit.
      freshSignerMemoForTests(2);
      expect(rememberSigners(saved.map(([key]) => [key, planted]))).toBe(2);
      expect(firstSigner(agreements[0]!)).toBe(planted);
      expect(firstSigner(agreements[1]!)).toBe(planted);
      // The one left out is recovered, and the full memo is not cleared for it: the loaded entries stay read.
      expect(firstSigner(agreements[2]!)).toBe(user);
      expect(firstSigner(agreements[0]!)).toBe(planted);
      expect(firstSigner(agreements[2]!)).toBe(user);
      expect(takeNewSigners()).toHaveLength(2);
    } finally {
      undo();
    }
  });
});
