/** The contract call of a behalf command (spec/otmoic.md §2 field mapping, §3 parameter order). */
import { swapInterface } from '../../shared/otmoic/abi.js';
import type { RelayCommand } from '../../topics/relay.commands.js';

const FUNCTIONS = {
  confirm_out: 'confirmTransferOut',
  confirm_in: 'confirmTransferIn',
  refund_out: 'refundTransferOut',
  refund_in: 'refundTransferIn',
} as const;

/** The action whose call `data` is (by its function selector), or undefined for any other call. */
export function actionOfCallData(data: string): RelayCommand['action'] | undefined {
  const name = swapInterface.getFunction(data.slice(0, 10))?.name;
  return (Object.keys(FUNCTIONS) as Array<keyof typeof FUNCTIONS>).find((a) => FUNCTIONS[a] === name);
}

export function callDataOf(action: RelayCommand['action'], call: RelayCommand['call']): string {
  const c = call;
  const head = [
    c.sender,
    c.receiver,
    c.token,
    BigInt(c.tokenAmount),
    BigInt(c.ethAmount),
    c.hashlock,
    c.expectedSingleStepTime,
    c.tolerantSingleStepTime,
    c.earliestRefundTime,
  ];
  const isConfirm = action === 'confirm_out' || action === 'confirm_in';
  if (isConfirm && c.preimage === undefined) throw new Error(`${action} needs the preimage`);
  const args = isConfirm ? [...head, c.preimage, c.agreementReachedTime] : [...head, c.agreementReachedTime];
  return swapInterface.encodeFunctionData(FUNCTIONS[action], args);
}
