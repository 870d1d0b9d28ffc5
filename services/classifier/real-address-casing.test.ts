/**
 * The address members of a real OtmoicSwap Message are the strings of the LP's bridge configuration and of the
 * user's input, each written as its author wrote it: a real bridge of the original LP node is
 * `9006_9006_0x7a5CEA1c44c27EfE3875e20d8a07F3B1441ba484_0x61d35c6b6a7568542aca42448b47690650c69bb9`, its
 * src_token checksummed and its dst_token lower-case, with a lower-case receiving address. The events carry
 * those members as numbers, so their casing is lost: the classifier tried all of them checksummed or all
 * lower-case, and such a swap's TransferOut was nobody's swap (its bid did not match), its complaint case 0.
 */
import { describe, expect, it } from 'vitest';
import { transferOutBid } from '../../shared/otmoic/agreement.js';
import { envAt, factsOf, swapSignedAs } from './judge-test-kit.js';
import { judge } from './judge.js';
import { SRC, DST, USER, USER_DID } from './swap-timeline.js';

const SRC_TOKEN = '0x5FbDB2315678afecb367f032d93F642f64180aa3'; // checksummed in the bridge
const DST_TOKEN = '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512'; // lower-case in the bridge

describe('a swap whose Message writes its address members in mixed casing (a real bridge)', () => {
  const { bid, events } = swapSignedAs({
    src_address: USER.address, // checksummed
    src_token: SRC_TOKEN,
    dst_address: USER.address.toLowerCase(), // the user typed it lower-case
    dst_token: DST_TOKEN,
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
