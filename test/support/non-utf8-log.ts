/** Test support: contract logs whose `string` arguments are not UTF-8 (anyone can emit one). */
import { expect } from 'vitest';
import { swapInterface } from '../../shared/otmoic/abi.js';

/** `data` with the ABI bytes of `text` (a unique marker) replaced by as many bytes that are not UTF-8. */
export const notUtf8 = (data: string, text: string): string => {
  const marker = Buffer.from(text).toString('hex');
  expect(data.split(marker)).toHaveLength(2);
  return data.replace(marker, 'fe'.repeat(text.length));
};

/** An encoded LogNewTransferOut of fixed members, its requestor `requestor` (a marker for notUtf8). */
export function transferOutLog(requestor: string) {
  return swapInterface.encodeEventLog(swapInterface.getEvent('LogNewTransferOut')!, [
    '0x' + '11'.repeat(32),
    '0x' + '22'.repeat(20),
    '0x' + '33'.repeat(20),
    '0x' + '00'.repeat(20),
    1n,
    '0x' + '44'.repeat(32),
    60n,
    60n,
    1_700_001_000n,
    614n,
    5n,
    '0x' + '55'.repeat(32),
    0n,
    1n,
    0n,
    1_700_000_000n,
    requestor,
    'lp-1',
    '0x' + '66'.repeat(65),
    '0x' + '77'.repeat(65),
  ]);
}
