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
  /** The last window of the agreement: anyone else may confirm out until T+3E+3Tol. */
  thirdPartyConfirmOutEnd: number;
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
      thirdPartyConfirmOutEnd: seconds(T + 3n * E + 3n * Tol),
    };
    windows.set(out, w);
  }
  return w;
}

/**
 * Whether a TransferIn can be an answer to `out` at all, whatever it names and whatever its terms: on the lock's
 * destination chain, by T+2E (the same for every lock of the agreement), and, naming `out`, not mined so long
 * before it that its orphan could have been removed before `out` came (outlivedByItsLock).
 */
export const inAnswerWindow = (out: TransferOut, tin: TransferIn): boolean =>
  tin.chainId === out.dstChainId &&
  tin.blockTimestamp <= windowsOf(out).transferInEnd &&
  !outlivedByItsLock(out, tin);

/**
 * Margin of the orphans' retention (orphan-retention.ts) for chains whose block times disagree, and for an event
 * the Connector publishes after its chunk: a day, as the hold of an invalid complaint. A constant, not
 * configuration: it is part of which TransferIns count (outlivedByItsLock), so a replay must use the live one.
 */
export const ORPHAN_CLOCK_MARGIN_SECONDS = 86_400;
/**
 * How far past its own block time a TransferIn's own T+E keeps its orphan: a week. An LP answers a lock it has
 * seen, so its TransferIn's block time is the lock's give or take the chains' disagreement, whatever T and E; a
 * TransferIn made before the lock on the lock's times is kept until T+E (the latest the contract takes that
 * lock), but no longer than this, or a TransferIn naming a made-up transfer with T in the far future would be
 * kept for ever.
 */
export const ORPHAN_AGREEMENT_HORIZON_SECONDS = 7 * 86_400;

const transferInExpiries = new WeakMap<TransferIn, number>();
/**
 * The latest block time of a lock whose TransferIn `tin` can be: its own block time, or its own T+E when that is
 * later (a lock on the TransferIn's times is refused by the contract after it), at most a week
 * (ORPHAN_AGREEMENT_HORIZON_SECONDS) later, plus the margin (ORPHAN_CLOCK_MARGIN_SECONDS). Its orphan is removed
 * once every watched chain's clock passed it (orphan-retention.ts). Remembered per event object.
 */
export function transferInExpiry(tin: TransferIn): number {
  let known = transferInExpiries.get(tin);
  if (known === undefined) {
    const own = BigInt(tin.blockTimestamp);
    const slack = BigInt(tin.agreementReachedTime) + BigInt(tin.expectedSingleStepTime) - own;
    const horizon = BigInt(ORPHAN_AGREEMENT_HORIZON_SECONDS);
    const kept = slack < 0n ? 0n : slack > horizon ? horizon : slack;
    known = seconds(own + kept + BigInt(ORPHAN_CLOCK_MARGIN_SECONDS));
    transferInExpiries.set(tin, known);
  }
  return known;
}

/**
 * A TransferIn naming `out` that was mined so long before it that `out` is later than transferInExpiry: arriving
 * before `out`, its orphan may have been removed (or not, as the chains' clocks and the lock's arrival
 * interleave), so it counts in no order, and a replay decides as the live run. Such a TransferIn answers no
 * lock the LP saw: it was mined more than a day before the lock it names on the chains' clocks, and either its
 * times differ from the lock's (the contract takes the lock until its T+E, so one on the lock's times is past
 * transferInExpiry only if that T+E is more than a week after the TransferIn), so that it was case 4 at most,
 * instead of case 3, or the LP locked its funds more than eight days before the user, on an agreement reached
 * a week after it: neither is a swap an LP carries out, and the contract would let the user take the LP's
 * funds without locking.
 */
export const outlivedByItsLock = (out: TransferOut, tin: TransferIn): boolean =>
  tin.srcTransferId === out.transferId && out.blockTimestamp > transferInExpiry(tin);

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
