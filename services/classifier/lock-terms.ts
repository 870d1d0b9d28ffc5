/**
 * What a decision reads off a lock alone and off one TransferIn against it: the lock's windows, and where a
 * TransferIn differs from its terms (case 4). Each is remembered per event object: a swap is judged at each of
 * its events and clock moves, and the facts compare each new TransferIn with its sender's earlier ones.
 */
import type { TransferIn, TransferOut } from './facts.js';

/** Window arithmetic is done in bigint (uint64 on chain); block times are safe integers. */
export const seconds = (value: bigint): number =>
  value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value);
const lower = (s: string) => s.toLowerCase();

/** The windows of a TransferOut's agreement (block times), remembered per event object like its agreement. */
export interface Windows {
  transferInEnd: number;
  userConfirmEnd: number;
  /** Anyone else may confirm out from T+3E+2Tol (the relay, for the user). */
  thirdPartyConfirmOutStart: number;
  lpConfirmEnd: number;
  thirdPartyConfirmInEnd: number;
}
const windows = new WeakMap<TransferOut, Windows>();
export function windowsOf(out: TransferOut): Windows {
  let w = windows.get(out);
  if (!w) {
    const T = BigInt(out.agreementReachedTime);
    const E = BigInt(out.expectedSingleStepTime);
    const Tol = BigInt(out.tolerantSingleStepTime);
    w = {
      transferInEnd: seconds(T + 2n * E),
      userConfirmEnd: seconds(T + 3n * E),
      thirdPartyConfirmOutStart: seconds(T + 3n * E + 2n * Tol),
      lpConfirmEnd: seconds(T + 3n * E + Tol),
      thirdPartyConfirmInEnd: seconds(T + 3n * E + 2n * Tol),
    };
    windows.set(out, w);
  }
  return w;
}

/**
 * Whether a TransferIn can be an answer to `out` at all, whatever it names and whatever its terms: on the lock's
 * destination chain, by T+2E (the same for every lock of the agreement).
 */
export const inAnswerWindow = (out: TransferOut, tin: TransferIn): boolean =>
  tin.chainId === out.dstChainId && tin.blockTimestamp <= windowsOf(out).transferInEnd;

/** What transferInMismatches names a different hashlock (an answer to another lock differs only so). */
const HASHLOCK = 'hashlock';
/** The differences (transferInMismatches) are none, or the hashlock only: it matches another lock of the agreement. */
export const differsButHashlock = (differences: readonly string[]): boolean =>
  differences.every((d) => d.startsWith(`${HASHLOCK} `));

/** Where a TransferIn differs from the TransferOut it answers (case 4), in words. */
export function transferInMismatches(out: TransferOut, tin: TransferIn): string[] {
  const d: string[] = [];
  check(d, 'token amount', out.amountDst, tin.tokenAmount);
  check(d, 'native amount', out.nativeAmountDst, tin.ethAmount);
  check(d, 'token', BigInt(out.tokenDst) >> 160n === 0n ? asAddress(out.tokenDst) : out.tokenDst, tin.token);
  check(
    d,
    'receiver',
    BigInt(out.dstAddress) >> 160n === 0n ? asAddress(out.dstAddress) : out.dstAddress,
    tin.receiver,
  );
  check(d, HASHLOCK, out.hashlock, tin.hashlock);
  check(d, 'agreement time', out.agreementReachedTime, tin.agreementReachedTime);
  check(d, 'expected step time', out.expectedSingleStepTime, tin.expectedSingleStepTime);
  check(d, 'tolerant step time', out.tolerantSingleStepTime, tin.tolerantSingleStepTime);
  check(d, 'earliest refund time', out.earliestRefundTime, tin.earliestRefundTime);
  check(d, 'source chain', out.chainId, tin.srcChainId);
  return d;
}

/**
 * transferInMismatches, remembered per TransferIn event object (with the TransferOut it was compared to): a
 * swap is judged again at each event and clock move, and the comparison parses and lower-cases every term.
 */
const mismatches = new WeakMap<TransferIn, { out: TransferOut; differences: string[] }>();
export function mismatchesOf(out: TransferOut, tin: TransferIn): string[] {
  const known = mismatches.get(tin);
  if (known?.out === out) return known.differences;
  const differences = transferInMismatches(out, tin);
  mismatches.set(tin, { out, differences });
  return differences;
}

function check(differences: string[], what: string, expected: string, actual: string): void {
  if (lower(expected) !== lower(actual)) differences.push(`${what} ${actual} ≠ agreed ${expected}`);
}

function asAddress(uint: string): string {
  return '0x' + BigInt(uint).toString(16).padStart(40, '0');
}
