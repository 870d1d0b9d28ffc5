/**
 * The Agent's check of a complaint's own signatures before it pays gas (agreement-proof.ts): what the
 * Classifier judges case 0 for its signatures or members is refused, what it judges on its merits is filed,
 * and a chain the deployment does not watch leaves the complaint unchecked (the Classifier says unknown).
 * Real secp256k1 signatures of the devnet's form; the DID source answers from a table.
 */
import { SigningKey, Wallet } from 'ethers';
import { describe, expect, it } from 'vitest';
import { swapDigest } from '../../shared/chain/index.js';
import { lpIdOf, signAgreement } from '../../shared/devnet/agreements.js';
import {
  complaintOfAgreement,
  swapMessage,
  uniform,
  type Agreement,
  type SignedAgreement,
} from '../../shared/otmoic/agreement.js';
import { agreementProof } from './agreement-proof.js';
import type { DidOwnership } from './did-ownership.js';

const SRC = { system: '9006', evm: 97 };
const DST = { system: '614', evm: 11155420 };
const watched = new Map([
  [SRC.system, SRC.evm],
  [DST.system, DST.evm],
]);
const user = Wallet.createRandom();
const lp = Wallet.createRandom();
const stranger = Wallet.createRandom();

const terms: Agreement = {
  srcChainId: BigInt(SRC.system),
  srcAddress: user.address,
  srcToken: '0x0000000000000000000000000000000000000000',
  srcAmount: '1000',
  dstChainId: BigInt(DST.system),
  dstAddress: user.address,
  dstToken: '0x0000000000000000000000000000000000000000',
  dstAmount: '990',
  dstNativeAmount: '0',
  requestor: user.address,
  lpId: lpIdOf(lp.address),
  agreementReachedTime: 1_700_000_000n,
  expectedSingleStepTime: 60n,
  tolerantSingleStepTime: 120n,
  earliestRefundTime: 1_700_000_600n,
};

/** DID owners by domain; counts the candidates asked about. */
function didTable(owners: Record<string, string>) {
  const asked: string[] = [];
  const did: Pick<DidOwnership, 'firstOwner'> = {
    async firstOwner(domain, candidates) {
      for (const candidate of candidates) {
        asked.push(candidate);
        if (owners[domain]?.toLowerCase() === candidate) return candidate;
      }
      return null;
    },
  };
  return { did, asked };
}
const lpOwnsItsId = () => didTable({ [terms.lpId]: lp.address });

const fieldsOf = (a: SignedAgreement) => complaintOfAgreement(a);
const signed = (keys: { userKey?: string; lpKey?: string } = {}, agreement: Agreement = terms) =>
  signAgreement(
    agreement,
    { userKey: keys.userKey ?? user.privateKey, lpKey: keys.lpKey ?? lp.privateKey },
    { srcEvmChainId: SRC.evm, dstEvmChainId: DST.evm },
  );

describe("the Agent's check of a complaint's agreement", () => {
  it('proves a complaint both parties signed, the LP through its DID', async () => {
    const { did } = lpOwnsItsId();
    await expect(agreementProof(fieldsOf(signed()), (c) => watched.get(c), did)).resolves.toEqual({
      kind: 'proven',
    });
  });

  it('proves signatures of any rendering the Classifier reads (here: lower-case addresses)', async () => {
    const lower = swapMessage(terms, uniform('lower'));
    const sign = (key: string, evm: number) =>
      new SigningKey(key).sign(swapDigest(lower, evm, 'swap')).serialized;
    const agreement: SignedAgreement = {
      ...terms,
      userSign: sign(user.privateKey, SRC.evm),
      lpSign: sign(lp.privateKey, DST.evm),
    };
    const { did } = lpOwnsItsId();
    await expect(agreementProof(fieldsOf(agreement), (c) => watched.get(c), did)).resolves.toEqual({
      kind: 'proven',
    });
  });

  it('refuses a userSign that does not recover the requestor, without asking the DID source', async () => {
    const { did, asked } = lpOwnsItsId();
    const proof = await agreementProof(
      fieldsOf(signed({ userKey: stranger.privateKey })),
      (c) => watched.get(c),
      did,
    );
    expect(proof).toEqual({
      kind: 'unproven',
      reason: `userSign does not recover the requestor ${user.address} under OtmoicSwap{chainId ${SRC.evm}}`,
    });
    expect(asked).toEqual([]);
  });

  it('refuses a userSign made under the destination chain (the domain is the source chain)', async () => {
    const agreement = signAgreement(
      terms,
      { userKey: user.privateKey, lpKey: lp.privateKey },
      { srcEvmChainId: DST.evm, dstEvmChainId: DST.evm },
    );
    const { did } = lpOwnsItsId();
    const proof = await agreementProof(fieldsOf(agreement), (c) => watched.get(c), did);
    expect(proof.kind).toBe('unproven');
  });

  it('refuses an lpSign whose signer does not own the LP id, after asking about every candidate', async () => {
    // The user signs for the LP too: it can make both signatures, not the LP's DID.
    const { did, asked } = lpOwnsItsId();
    const proof = await agreementProof(
      fieldsOf(signed({ lpKey: user.privateKey })),
      (c) => watched.get(c),
      did,
    );
    expect(proof).toEqual({
      kind: 'unproven',
      reason: `lpSign does not recover an address whose DID names include ${terms.lpId} under OtmoicSwap{chainId ${DST.evm}}`,
    });
    // Every version of the Message was tried (16 renderings of a complaint's agreement, some alike).
    expect(asked).toContain(user.address.toLowerCase());
    expect(asked.length).toBeGreaterThan(1);
  });

  it('refuses a member that cannot be read on a watched chain (case 0 there too)', async () => {
    const fields = { ...fieldsOf(signed()), srcAddress: (1n << 200n).toString() };
    const { did } = lpOwnsItsId();
    const proof = await agreementProof(fields, (c) => watched.get(c), did);
    expect(proof.kind).toBe('unproven');
    expect(proof.kind === 'unproven' && proof.reason).toMatch(/srcAddress: not an address/);
  });

  it('leaves a swap on a chain not watched here unchecked, however its signatures look', async () => {
    const { did, asked } = lpOwnsItsId();
    const forged = fieldsOf(signed({ userKey: stranger.privateKey, lpKey: stranger.privateKey }));
    const onlySource = new Map([[SRC.system, SRC.evm]]);
    await expect(agreementProof(forged, (c) => onlySource.get(c), did)).resolves.toEqual({
      kind: 'unchecked',
      reason: `the complaint's chain ${DST.system} is not watched by this deployment`,
    });
    // A non-EVM destination (a 32-byte address) on a chain not watched: unknown, not case 0.
    const solana = { ...forged, dstAddress: (1n << 250n).toString() };
    await expect(agreementProof(solana, (c) => onlySource.get(c), did)).resolves.toMatchObject({
      kind: 'unchecked',
    });
    // No chain at all (no [[chainClients]]): nothing is checked.
    await expect(agreementProof(forged, () => undefined, did)).resolves.toMatchObject({
      kind: 'unchecked',
    });
    expect(asked).toEqual([]);
  });

  it('lets a DID source failure through to the caller (503, nothing stored)', async () => {
    const did: Pick<DidOwnership, 'firstOwner'> = {
      firstOwner: async () => {
        throw new Error('DID support answered HTTP 502');
      },
    };
    await expect(agreementProof(fieldsOf(signed()), (c) => watched.get(c), did)).rejects.toThrow(/502/);
  });
});
