/**
 * The address members of a real OtmoicSwap Message are the strings of the LP's bridge configuration and of the
 * user's input, each written as its author wrote it: a real bridge of the original LP node is
 * `9006_9006_0x7a5CEA1c44c27EfE3875e20d8a07F3B1441ba484_0x61d35c6b6a7568542aca42448b47690650c69bb9`, its
 * src_token checksummed and its dst_token lower-case, with a lower-case receiving address. The events carry
 * those members as numbers, so their casing is lost: the classifier tried all of them checksummed or all
 * lower-case, and such a swap's TransferOut was nobody's swap (its bid did not match), its complaint case 0.
 */
import { SigningKey } from 'ethers';
import { describe, expect, it } from 'vitest';
import { bidId } from '../../shared/chain/bid-id.js';
import { swapDigest } from '../../shared/chain/otmoic-swap-eip712.js';
import { transferOutBid } from '../../shared/otmoic/agreement.js';
import type { ChainEvent } from '../../topics/index.js';
import { envAt, factsOf, HONEST_SWAP } from './judge-test-kit.js';
import { judge } from './judge.js';
import { buildTimeline, DST, LP, LP_ID, SRC, USER, USER_DID } from './swap-timeline.js';

const SRC_TOKEN = '0x5FbDB2315678afecb367f032d93F642f64180aa3'; // checksummed in the bridge
const DST_TOKEN = '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512'; // lower-case in the bridge

describe('a swap whose Message writes its address members in mixed casing (a real bridge)', () => {
  const t = buildTimeline({ ...HONEST_SWAP, complaint: { by: 'lp', at: 1001 } });
  const out = t.streams[SRC.chainId]!.find((e) => e.kind === 'TransferOut')!;
  if (out.kind !== 'TransferOut') throw new Error('no TransferOut');
  const a = t.agreement;
  const message = {
    src_chain_id: a.srcChainId,
    src_address: USER.address, // checksummed
    src_token: SRC_TOKEN,
    src_amount: a.srcAmount,
    dst_chain_id: a.dstChainId,
    dst_address: USER.address.toLowerCase(), // the user typed it lower-case
    dst_token: DST_TOKEN,
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
  // The Complaint struct as the SDK fills it (tokens verbatim from the bridge) and the LP node hashes it.
  const complaint = {
    srcChainId: SRC.chainId,
    srcAddress: BigInt(USER.address).toString(),
    srcToken: SRC_TOKEN,
    dstChainId: DST.chainId,
    dstAddress: BigInt(USER.address).toString(),
    dstToken: DST_TOKEN,
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
  // The chain client gives the source token as a checksummed address, the uint256 tokenDst in decimal.
  const events = Object.values(t.streams)
    .flat()
    .map((e): ChainEvent => {
      if (e.kind === 'TransferOut')
        return {
          ...e,
          token: SRC_TOKEN,
          tokenDst: BigInt(DST_TOKEN).toString(),
          bidId: bid,
          userSign,
          lpSign,
        };
      if (e.kind === 'TransferIn') return { ...e, token: DST_TOKEN };
      if (e.kind === 'Complaint') return { ...e, bidId: bid, complaint };
      return e;
    });

  it("the TransferOut executes its bid (its fields hash to it with the bridge's token strings)", () => {
    const lock = events.find((e) => e.kind === 'TransferOut')!;
    expect(lock.kind === 'TransferOut' && transferOutBid(lock)).toEqual({ executes: true });
  });

  it('the honest swap is normal, and the LP complaint about it is valid', () => {
    const j = judge(factsOf(bid, events), envAt({ [SRC.chainId]: 200_000, [DST.chainId]: 200_000 }));
    expect(j).toMatchObject({ status: 'decided' });
    if (j.status !== 'decided') return;
    expect([j.verdict.outcome, j.verdict.case, j.verdict.rule]).toEqual([
      'normal',
      null,
      expect.stringContaining('normal'),
    ]);
    expect(j.verdict.evidence).toMatchObject({ userConsent: true, lpConsent: true });
    expect(j.verdict.complaint).toMatchObject({ valid: true, complainantParty: 'lp' });
  });

  it("a user's complaint with no TransferOut is the user's, not case 0 (the signatures prove both parties)", () => {
    const userComplaint = events
      .filter((e) => e.kind === 'Complaint')
      .map((e) => ({ ...e, complainant: USER_DID }));
    const j = judge(factsOf(bid, userComplaint), envAt({ [SRC.chainId]: 200_000, [DST.chainId]: 200_000 }));
    expect(j).toMatchObject({ status: 'decided' });
    if (j.status !== 'decided') return;
    expect(j.verdict.rule).not.toMatch(/case 0/);
    expect([j.verdict.outcome, j.verdict.case]).toEqual(['violation', 1]);
  });
});
