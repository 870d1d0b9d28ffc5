/**
 * An invalid complaint alone waits a day for a TransferOut with its bid (README "An invalid complaint alone waits
 * a day for a TransferOut", INVALID_COMPLAINT_HOLD_SECONDS), and, when its signatures prove the agreement, for
 * that agreement's own T+E (a TransferOut can come until then). A complaint whose signatures prove nothing has no
 * agreement, and its times say nothing: waiting for its T+E too, a complaint anyone can file on the contract
 * with agreementReachedTime near 2^64 stayed pending for ever (classifier_pending_swaps and
 * classifier_oldest_pending_age_seconds grew for good, not "for up to a day").
 */
import { keccak256, toUtf8Bytes } from 'ethers';
import { describe, expect, it } from 'vitest';
import { bidIdPreimage } from '../../shared/chain/bid-id.js';
import type { Complaint } from '../../shared/chain/index.js';
import { complaintOfAgreement } from '../../shared/otmoic/agreement.js';
import type { ChainEvent } from '../../topics/index.js';
import { envAt, factsOf } from './judge-test-kit.js';
import { INVALID_COMPLAINT_HOLD_SECONDS, judge } from './judge.js';
import {
  buildTimeline,
  DST,
  REPUTATION,
  REPUTATION_CHAIN,
  SRC,
  STRANGER,
  STRANGER_DID,
} from './swap-timeline.js';

const FILED_AT = 1_000;
const FAR = (2n ** 63n).toString();

function complaintWith(
  fields: Record<string, string>,
  complainant: string,
): Extract<ChainEvent, { kind: 'Complaint' }> {
  return {
    kind: 'Complaint',
    chainId: REPUTATION_CHAIN,
    contract: REPUTATION,
    blockNumber: 1,
    blockTimestamp: FILED_AT,
    txHash: '0x' + 'f1'.repeat(32),
    logIndex: 0,
    txFrom: STRANGER.address,
    bidId: keccak256(toUtf8Bytes(bidIdPreimage(fields as unknown as Complaint))),
    complainant,
    complaint: fields,
  };
}

describe('an invalid complaint whose times are far in the future', () => {
  const timeline = buildTimeline({
    T: 1000,
    E: 3,
    Tol: 2,
    lpSign: 'lp',
    userSign: 'user',
    out: { kind: 'none' },
    in: { kind: 'none' },
  });
  const past = FILED_AT + INVALID_COMPLAINT_HOLD_SECONDS + 1;
  const clocks = { [SRC.chainId]: past, [DST.chainId]: past };

  it('is case 0 once the hold has passed when its signatures prove nothing', () => {
    const fields = { ...complaintOfAgreement(timeline.agreement), agreementReachedTime: FAR };
    const event = complaintWith(fields, STRANGER_DID);
    const judged = judge(factsOf(event.bidId, [event]), envAt(clocks));
    expect(judged).toMatchObject({
      status: 'decided',
      verdict: { outcome: 'invalid_complaint', case: 0, party: null },
    });
  });

  it('still waits for T+E when its signatures prove the agreement (a TransferOut may come until then)', () => {
    const event = complaintWith(complaintOfAgreement(timeline.agreement), STRANGER_DID);
    // The genuine agreement (T+E = 1003) from a stranger: case 0 once the hold has passed.
    expect(judge(factsOf(event.bidId, [event]), envAt(clocks))).toMatchObject({
      status: 'decided',
      verdict: { outcome: 'invalid_complaint', case: 0 },
    });
    // Before the source clock passed its T+E, it waits for it, whatever the hold.
    expect(
      judge(factsOf(event.bidId, [event]), envAt({ [SRC.chainId]: 1003, [DST.chainId]: past })),
    ).toMatchObject({ status: 'pending', wait: { kind: 'clock', chainId: SRC.chainId, until: 1004 } });
  });
});
