/**
 * `src_address` has two forms. Our specification (spec §2.1) makes it the user's source-chain address, the
 * TransferOut's sender; the real SDK (Software-Development-Kit src/business/evm.ts) signs
 * `quote_base.lp_bridge_address`, the LP's receiving address on the source chain, i.e. the TransferOut's
 * receiver, and fills the complaint's `srcAddress` with it. spec/otmoic.md: the specification wins and the
 * original form is accepted as an alias. Before the alias, such a swap's TransferOut was foreign (its fields
 * did not hash to its bid), and its complaint case 0 or 2.
 */
import { SigningKey } from 'ethers';
import { describe, expect, it } from 'vitest';
import { bidId } from '../../shared/chain/bid-id.js';
import { swapDigest } from '../../shared/chain/otmoic-swap-eip712.js';
import { agreementOfTransferOut, bidIdOfAgreement, transferOutBid } from '../../shared/otmoic/agreement.js';
import type { ChainEvent } from '../../topics/index.js';
import { envAt, factsOf, HONEST_SWAP } from './judge-test-kit.js';
import { judge } from './judge.js';
import { buildTimeline, DST, LP, LP_ID, SRC, STRANGER, USER, USER_DID } from './swap-timeline.js';

const CLOCKS = { [SRC.chainId]: 200_000, [DST.chainId]: 200_000 };

/** An honest swap with an LP complaint, its Message and Complaint signed with `src_address` = `srcAddress`. */
function swapSignedWith(srcAddress: string) {
  const t = buildTimeline({ ...HONEST_SWAP, complaint: { by: 'lp', at: 1001 } });
  const a = t.agreement;
  const message = {
    src_chain_id: a.srcChainId,
    src_address: srcAddress,
    src_token: a.srcToken,
    src_amount: a.srcAmount,
    dst_chain_id: a.dstChainId,
    dst_address: a.dstAddress,
    dst_token: a.dstToken,
    dst_amount: a.dstAmount,
    dst_native_amount: a.dstNativeAmount,
    requestor: a.requestor,
    lp_id: a.lpId,
    agreement_reached_time: a.agreementReachedTime,
    expected_single_step_time: a.expectedSingleStepTime,
    tolerant_single_step_time: a.tolerantSingleStepTime,
    earliest_refund_time: a.earliestRefundTime,
  };
  const sign = (key: string, evm: number) =>
    new SigningKey(key).sign(swapDigest(message, evm, 'swap')).serialized;
  const userSign = sign(USER.privateKey, SRC.evm);
  const lpSign = sign(LP.privateKey, DST.evm);
  // The Complaint struct as the SDK fills it (srcAddress = the same address) and the LP node hashes it.
  const complaint = {
    srcChainId: SRC.chainId,
    srcAddress: BigInt(srcAddress).toString(),
    srcToken: a.srcToken,
    dstChainId: DST.chainId,
    dstAddress: BigInt(a.dstAddress).toString(),
    dstToken: a.dstToken,
    srcAmount: a.srcAmount,
    dstAmount: a.dstAmount,
    dstNativeAmount: a.dstNativeAmount,
    requestor: a.requestor,
    lpId: LP_ID,
    expectedSingleStepTime: a.expectedSingleStepTime.toString(),
    tolerantSingleStepTime: a.tolerantSingleStepTime.toString(),
    earliestRefundTime: a.earliestRefundTime.toString(),
    agreementReachedTime: a.agreementReachedTime.toString(),
    userSign,
    lpSign,
  };
  const bid = bidId({
    ...complaint,
    srcChainId: BigInt(complaint.srcChainId),
    srcAddress: BigInt(complaint.srcAddress),
    dstChainId: BigInt(complaint.dstChainId),
    dstAddress: BigInt(complaint.dstAddress),
    expectedSingleStepTime: a.expectedSingleStepTime,
    tolerantSingleStepTime: a.tolerantSingleStepTime,
    earliestRefundTime: a.earliestRefundTime,
    agreementReachedTime: a.agreementReachedTime,
  });
  const events = Object.values(t.streams)
    .flat()
    .map((e): ChainEvent => {
      if (e.kind === 'TransferOut') return { ...e, bidId: bid, userSign, lpSign };
      if (e.kind === 'Complaint') return { ...e, bidId: bid, complaint };
      return e;
    });
  const lock = events.find((e) => e.kind === 'TransferOut')!;
  if (lock.kind !== 'TransferOut') throw new Error('no TransferOut');
  return { bid, events, lock };
}

describe("an agreement signed with src_address = the TransferOut's receiver (the SDK's lp_bridge_address)", () => {
  const { bid, events, lock } = swapSignedWith(LP.address);

  it('the swap is built as the SDK does: the lock pays the LP, sent by the user', () => {
    expect([lock.sender, lock.receiver]).toEqual([USER.address, LP.address]);
  });

  it('the TransferOut executes its bid (its fields hash to it with srcAddress = its receiver)', () => {
    expect(transferOutBid(lock)).toEqual({ executes: true });
  });

  it('the honest swap is normal (not foreign, not case 0, not case 2), both consents proven', () => {
    const facts = factsOf(bid, events);
    expect(facts.out).not.toBeNull();
    const j = judge(facts, envAt(CLOCKS));
    expect(j).toMatchObject({ status: 'decided' });
    if (j.status !== 'decided') return;
    expect([j.verdict.outcome, j.verdict.case, j.verdict.rule]).toEqual([
      'normal',
      null,
      expect.stringContaining('normal'),
    ]);
    expect(j.verdict.evidence).toMatchObject({ userConsent: true, lpConsent: true });
  });

  it("the LP's genuine complaint in that form is valid and no difference from the TransferOut", () => {
    const j = judge(factsOf(bid, events), envAt(CLOCKS));
    if (j.status !== 'decided') throw new Error(`not decided: ${JSON.stringify(j)}`);
    expect(j.verdict.complaint).toMatchObject({ valid: true, complainantParty: 'lp' });
    expect([j.verdict.outcome, j.verdict.rule]).toEqual(['normal', expect.not.stringMatching(/case [012]/)]);
  });

  it("a user's complaint in that form with no TransferOut is the user's case 1, not case 0", () => {
    const userComplaint = events
      .filter((e) => e.kind === 'Complaint')
      .map((e) => ({ ...e, complainant: USER_DID }));
    const j = judge(factsOf(bid, userComplaint), envAt(CLOCKS));
    if (j.status !== 'decided') throw new Error(`not decided: ${JSON.stringify(j)}`);
    expect(j.verdict.complaint).toMatchObject({ valid: true, complainantParty: 'user' });
    expect([j.verdict.outcome, j.verdict.case]).toEqual(['violation', 1]);
  });
});

describe('an agreement whose src_address is neither the sender nor the receiver', () => {
  const { bid, events, lock } = swapSignedWith(STRANGER.address);

  it('is still not the swap: the TransferOut is foreign, and the complaint alone decides (case 1)', () => {
    expect(transferOutBid(lock)).toMatchObject({ executes: false });
    const facts = factsOf(bid, events);
    expect(facts.out).toBeNull();
    const j = judge(facts, envAt(CLOCKS));
    if (j.status !== 'decided') throw new Error(`not decided: ${JSON.stringify(j)}`);
    expect([j.verdict.outcome, j.verdict.case]).toEqual(['violation', 1]);
  });

  it('signed so, on a lock that is the swap (its bid of the sender form), proves neither consent: case 2', () => {
    // The signatures are part of the bid: the lock names the bid of its own fields in the sender form, so it is
    // the swap, but neither form of src_address recovers the requestor or an address of the LP.
    const swapBid = bidIdOfAgreement(agreementOfTransferOut(lock));
    const swapLock = { ...lock, bidId: swapBid };
    expect(transferOutBid(swapLock)).toEqual({ executes: true });
    const j = judge(factsOf(swapBid, [swapLock]), envAt(CLOCKS));
    if (j.status !== 'decided') throw new Error(`not decided: ${JSON.stringify(j)}`);
    expect([j.verdict.outcome, j.verdict.case]).toEqual(['violation', 2]);
    expect(j.verdict.rule).toMatch(/without LP consent/);
    expect(j.verdict.evidence).toMatchObject({ userConsent: false, lpConsent: false });
  });
});
