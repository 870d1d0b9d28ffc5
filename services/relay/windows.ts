/**
 * When the relay may make each call (spec/otmoic.md §3). The relay is neither the user nor the LP, so the
 * contract accepts its confirms only in the late third-party windows; refunds are open to anyone after R.
 * Bounds are inclusive block timestamps (unix seconds); `end` null = no end.
 */
import type { RelayCommand } from '../../topics/relay.commands.js';

export interface CallWindow {
  /** The contract's name of the operation (as in its NotInOpWindow / NotUnlock reverts). */
  op: string;
  start: number;
  end: number | null;
}

export function callWindow(action: RelayCommand['action'], call: RelayCommand['call']): CallWindow {
  const T = call.agreementReachedTime;
  const E = call.expectedSingleStepTime;
  const Tol = call.tolerantSingleStepTime;
  switch (action) {
    case 'confirm_out':
      return { op: 'non-user confirm out', start: T + 3 * E + 2 * Tol, end: T + 3 * E + 3 * Tol };
    case 'confirm_in':
      return { op: 'non-lp confirm in', start: T + 3 * E + Tol, end: T + 3 * E + 2 * Tol };
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
