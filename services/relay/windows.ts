/**
 * When the relay may make each call (spec/otmoic.md §3, the contract's confirmTransferOut / confirmTransferIn).
 * The contract tells the parties by `msg.sender == _sender`: a relay whose wallet is not the lock's sender may
 * confirm only in the late third-party windows; one whose wallet is (an operator who gives the relay the LP's
 * key, as the original chain client signed behalf commands with the LP wallet) confirms as that party, from
 * the agreement until its deadline, and the late window is refused to it. Refunds are open to anyone after R.
 * Bounds are inclusive block timestamps (unix seconds); `end` null = no end.
 */
import type { RelayCommand } from '../../topics/relay.commands.js';

export interface CallWindow {
  /** The contract's name of the operation (as in its NotInOpWindow / NotUnlock / ExpiredOp reverts). */
  op: string;
  start: number;
  end: number | null;
}

/** `relayWallet`: the address the relay sends from (any case). */
export function callWindow(
  action: RelayCommand['action'],
  call: RelayCommand['call'],
  relayWallet: string,
): CallWindow {
  const T = call.agreementReachedTime;
  const E = call.expectedSingleStepTime;
  const Tol = call.tolerantSingleStepTime;
  const asParty = call.sender.toLowerCase() === relayWallet.toLowerCase();
  switch (action) {
    case 'confirm_out':
      return asParty
        ? { op: 'user confirm out', start: T, end: T + 3 * E }
        : { op: 'non-user confirm out', start: T + 3 * E + 2 * Tol, end: T + 3 * E + 3 * Tol };
    case 'confirm_in':
      return asParty
        ? { op: 'lp confirm in', start: T, end: T + 3 * E + Tol }
        : { op: 'non-lp confirm in', start: T + 3 * E + Tol, end: T + 3 * E + 2 * Tol };
    case 'refund_out':
      return { op: 'refund out', start: call.earliestRefundTime + 1, end: null };
    case 'refund_in':
      return { op: 'refund in', start: call.earliestRefundTime + 1, end: null };
  }
}

export function describeWindow(window: CallWindow): string {
  return window.end === null
    ? `${window.op} is allowed from block time ${window.start}`
    : `${window.op} is allowed from block time ${window.start} to ${window.end}`;
}
