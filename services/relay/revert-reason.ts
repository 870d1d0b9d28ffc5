/** Readable reasons for the swap contract's custom errors (spec/otmoic.md §3), for a command's final status. */
import { decodeRevert } from '../../shared/devnet/revert-error.js';
import { swapInterface } from '../../shared/otmoic/abi.js';

export interface ContractRevert {
  name: string;
  reason: string;
}

/** The decoded custom error of a failed call or estimate, or undefined when the error carries none. */
export function contractRevertOf(error: unknown): ContractRevert | undefined {
  const revert = decodeRevert(error, swapInterface);
  if (revert === undefined) return undefined;
  const a = revert.args.map(String);
  const reasons: Record<string, string> = {
    NotInOpWindow: `NotInOpWindow: ${a[0]} is allowed from block time ${a[1]} to ${a[2]}`,
    ExpiredOp: `ExpiredOp: ${a[0]} expired at block time ${a[1]}`,
    NotUnlock: `NotUnlock: ${a[0]} is locked until block time ${a[1]}`,
    InvalidStatus:
      'InvalidStatus: the transfer is not pending on chain (never locked with these terms, or already confirmed or refunded)',
    InvalidHashlock: 'InvalidHashlock: the preimage does not open the hashlock',
    InvalidSender: 'InvalidSender: the contract refused the caller',
    InvalidAmount: 'InvalidAmount: the amounts do not match the lock',
    InvalidRefundTime: 'InvalidRefundTime: the refund time is not valid for these windows',
  };
  return { name: revert.name, reason: reasons[revert.name] ?? `${revert.name}(${a.join(', ')})` };
}
