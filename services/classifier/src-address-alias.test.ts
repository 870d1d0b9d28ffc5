/**
 * `src_address` has two forms. Our specification (spec §2.1) makes it the user's source-chain address, the
 * TransferOut's sender; the real SDK (Software-Development-Kit src/business/evm.ts) signs
 * `quote_base.lp_bridge_address`, the LP's receiving address on the source chain, i.e. the TransferOut's
 * receiver, and fills the complaint's `srcAddress` with it. spec/otmoic.md: the specification wins and the
 * original form is accepted as an alias. Before the alias, such a swap's TransferOut was foreign (its fields
 * did not hash to its bid), and its complaint case 0 or 2.
 */
import { describe, expect, it } from 'vitest';
import { agreementOfTransferOut, bidIdOfAgreement, transferOutBid } from '../../shared/otmoic/agreement.js';
import { envAt, factsOf, swapSignedAs } from './judge-test-kit.js';
import { judge } from './judge.js';
import { DST, LP, SRC, STRANGER, USER, USER_DID } from './swap-timeline.js';

const CLOCKS = { [SRC.chainId]: 200_000, [DST.chainId]: 200_000 };

describe("an agreement signed with src_address = the TransferOut's receiver (the SDK's lp_bridge_address)", () => {
  const { bid, events, lock } = swapSignedAs({ src_address: LP.address });

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
  const { bid, events, lock } = swapSignedAs({ src_address: STRANGER.address });

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
