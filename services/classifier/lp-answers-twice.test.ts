/**
 * The contract lets several TransferIns name one lock. An LP that answered from two of its wallets (both named
 * by its DID) and confirmed in the second answered in full: it was case 6 on the LP, because only its first
 * answer's ConfirmIn was read. And a user who confirms in the second answer without confirming out is the known
 * cheat, case 7 (it was case 5), also when the LP confirmed in the first (only the ConfirmIn of the answer the
 * swap goes on with was checked for case 7).
 */
import { describe, expect, it } from 'vitest';
import type { ChainEvent } from '../../topics/index.js';
import { judge } from './judge.js';
import { envAt, factsOf, HONEST_SWAP } from './judge-test-kit.js';
import { DID_NAMES, DST, LP_ID, SRC, account, buildTimeline } from './swap-timeline.js';

type TransferIn = Extract<ChainEvent, { kind: 'TransferIn' }>;
const shown = (j: ReturnType<typeof judge>) =>
  j.status === 'decided' ? [j.verdict.outcome, j.verdict.case, j.verdict.party] : ['pending', j.reason];

/** A second wallet of the LP: its DID names include the LP's id. */
const LP_WALLET_2 = account(5).address;
const withSecondLpWallet = (clocks: Record<string, number>) => ({
  ...envAt(clocks),
  didNames: (a: string) => (a === LP_WALLET_2.toLowerCase() ? [LP_ID] : (DID_NAMES[a] ?? [])),
});

/** The honest swap's events, and the same answer again from the LP's second wallet (another transfer id). */
function answeredTwice() {
  const t = buildTimeline(HONEST_SWAP);
  const dst = t.streams[DST.chainId]!;
  const first = dst.find((e): e is TransferIn => e.kind === 'TransferIn')!;
  const second: TransferIn = {
    ...first,
    blockNumber: first.blockNumber + 100,
    txHash: '0x' + 'a2'.repeat(32),
    sender: LP_WALLET_2,
    txFrom: LP_WALLET_2,
    transferId: '0x' + 'b2'.repeat(32),
  };
  const confirmIn = dst.find((e) => e.kind === 'ConfirmIn')!;
  /** A ConfirmIn of the second answer. */
  const confirmsSecond = (fields: Partial<ChainEvent>) =>
    ({
      ...confirmIn,
      transferId: second.transferId,
      blockNumber: second.blockNumber + 1,
      ...fields,
    }) as ChainEvent;
  return { t, out: t.streams[SRC.chainId]!, first, second, confirmsSecond };
}
const clocks = withSecondLpWallet({ [SRC.chainId]: 2000, [DST.chainId]: 2000 });

describe('the LP answers twice (two of its wallets) and confirms in the second answer', () => {
  // HONEST_SWAP: T 1000, E 3, Tol 2. The LP's TransferIn at 1001 from its first wallet, the same terms again
  // at 1001 from its second wallet, the user confirms out at 1002 and the LP confirms in its second TransferIn
  // at 1003 (<= T+3E+Tol = 1011): the user is paid in time, the LP did its part (it was case 6 on the LP).
  it('is normal', () => {
    const { t, out, first, second, confirmsSecond } = answeredTwice();
    const events = [...out, first, second, confirmsSecond({ txFrom: LP_WALLET_2 })];
    expect(shown(judge(factsOf(t.bidId, events), clocks))).toEqual(['normal', null, null]);
  });
});

describe('the user confirms in the LP’s second answer without confirming out (the known cheat)', () => {
  // Nobody confirms out and the user confirms in the second answer at T+3E+Tol+1 = 1012 (the non-LP window):
  // case 7 on the user (it was case 5).
  it('is case 7', () => {
    const { t, out, first, second, confirmsSecond } = answeredTwice();
    const lock = out.find((e) => e.kind === 'TransferOut')!;
    const events = [lock, first, second, confirmsSecond({ txFrom: lock.sender, blockTimestamp: 1012 })];
    expect(shown(judge(factsOf(t.bidId, events), clocks))).toEqual(['violation', 7, 'user']);
  });
});

describe('the LP confirms in its first answer and the user the second, without confirming out', () => {
  // The LP confirms in its first TransferIn at 1005 (its window ends at T+3E+Tol = 1011), nobody confirms out,
  // and the user confirms in the second at 1012 (the non-LP window, up to T+3E+2Tol = 1013): case 7 on the user
  // (it was case 5, checked on the first answer's ConfirmIn alone).
  function cheatOnSecond() {
    const { t, out, first, second, confirmsSecond } = answeredTwice();
    const lock = out.find((e) => e.kind === 'TransferOut')!;
    const lpConfirmsFirst = confirmsSecond({
      transferId: first.transferId,
      txFrom: first.sender,
      blockTimestamp: 1005,
    });
    const userConfirmsSecond = confirmsSecond({
      txFrom: lock.sender,
      blockTimestamp: 1012,
      blockNumber: second.blockNumber + 2,
      txHash: '0x' + 'c3'.repeat(32),
    });
    return { t, lock, first, second, lpConfirmsFirst, userConfirmsSecond };
  }

  it('is case 7, on the second answer', () => {
    const { t, lock, first, second, lpConfirmsFirst, userConfirmsSecond } = cheatOnSecond();
    const j = judge(factsOf(t.bidId, [lock, first, second, lpConfirmsFirst, userConfirmsSecond]), clocks);
    expect(shown(j)).toEqual(['violation', 7, 'user']);
    if (j.status !== 'decided') throw new Error('not decided');
    expect(j.verdict.blockTime).toBe(1012);
    expect(j.verdict.transferInId).toBe(second.transferId);
  });

  it('is not case 5 before the second answer can no longer be confirmed in', () => {
    // Both clocks past T+3E = 1009 and the LP's ConfirmIn, not past the non-LP window: the user's ConfirmIn
    // may still come, so case 5 is not settled.
    const { t, lock, first, second, lpConfirmsFirst } = cheatOnSecond();
    const events = [lock, first, second, lpConfirmsFirst];
    const early = withSecondLpWallet({ [SRC.chainId]: 1012, [DST.chainId]: 1012 });
    expect(shown(judge(factsOf(t.bidId, events), early))[0]).toBe('pending');
    expect(shown(judge(factsOf(t.bidId, events), clocks))).toEqual(['violation', 5, 'user']);
  });
});
