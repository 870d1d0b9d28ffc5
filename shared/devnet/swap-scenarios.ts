// Drives whole swaps on a two-chain devnet: an honest one and the three known cheats of spec/otmoic.md §3.
// Every step is mined at an exact block timestamp, so tests know each event's block time.
import { Contract, hexlify, randomBytes } from 'ethers';
import { OTMOIC_SWAP_ABI } from '../otmoic/abi.js';
import {
  callAt,
  computeTransferId,
  confirmArgs,
  hashlockOf,
  refundArgs,
  transferInArgs,
  transferOutArgs,
} from '../../contracts/otmoic-test-kit.js';
import type { OutExtras, SwapSide } from '../../contracts/otmoic-test-kit.js';
import type { DevnetChain } from './devnet.js';
import { bidIdOf, lpIdOf, registerDids, signAgreement, userDid } from './agreements.js';
import type { SignedAgreement } from '../otmoic/agreement.js';

export type SwapScenario = 'honest' | 'short_amount' | 'wrong_receiver' | 'confirm_in_without_confirm_out';

export interface ScenarioParties {
  /** Account indexes on the devnet. */
  user: number;
  lp: number;
}

export interface SwapStep {
  step: 'transferOut' | 'transferIn' | 'confirmOut' | 'confirmIn';
  chainId: number;
  txHash: string;
  blockNumber: number;
  timestamp: number;
  from: string;
}

export type ExecutedSwap = LockedSwap & { scenario: SwapScenario };

export interface ScenarioOptions {
  src: DevnetChain;
  dst: DevnetChain;
  /** Otmoic system chain ids written into the events (e.g. 9006 and 614). */
  srcSystemChainId: number;
  dstSystemChainId: number;
  parties?: ScenarioParties;
  /** Native coin amounts in wei. */
  amountOut?: bigint;
  amountIn?: bigint;
  E?: number;
  Tol?: number;
  /** Who receives the user's lock on `src` (default the LP; a contract in gas tests). */
  outReceiver?: string;
  /**
   * The chain whose Reputation contract is the DID registry: the LP's lpId and the user's DID name are
   * registered there before the swap (the classifier proves LP consent through it).
   */
  didChain?: DevnetChain;
  /** How the LP answers the TransferOut on the destination chain (default: correctly). */
  lpAnswer?: LpAnswer;
  /** false: the parties agree (and sign) but nobody locks; `tryStep` can lock later at any time. */
  lock?: boolean;
}

/** The LP's answer: correct, none at all (case 3), or a TransferIn that differs from the TransferOut (case 4). */
export type LpAnswer = 'ok' | 'none' | 'wrong_amount' | 'wrong_hashlock';

const SWAP = OTMOIC_SWAP_ABI as unknown as string[];

/** The user's cheats that happen while locking (the rest of the swap is then honest). */
export type LockingCheat = 'short_amount' | 'wrong_receiver';

export interface LockedSwap {
  /** The bid the TransferOut carries: of the agreement, or of the short terms a short_amount lock claims. */
  bidId: string;
  preimage: string;
  hashlock: string;
  /** The agreement the parties signed (what a complaint and the classifier compare against). */
  agreed: { amountOut: bigint; amountIn: bigint; lpReceiverOnSrc: string; userReceiverOnDst: string };
  /** The signed agreement itself (userSign and lpSign are genuine signatures of the parties). */
  agreement: SignedAgreement;
  lpId: string;
  userDid: string;
  srcSystemChainId: number;
  /** The TransferOut's arguments beyond the lock side (bid, destination, signatures). */
  outExtras: OutExtras;
  /** The user's lock on `src` and the LP's lock on `dst`, with their transfer ids. */
  out: SwapSide & { transferId: string };
  in: SwapSide & { transferId: string };
  times: { T: number; E: number; Tol: number; R: number };
  steps: SwapStep[];
}

/**
 * Both sides locked (transferOut by the user at T+1, transferIn by the LP at T+2) and then nobody confirms:
 * the start of every scenario, and of "the user never confirms out" / "the LP never confirms in", which the
 * relay finishes with behalf commands. `src` and `dst` may be the same chain (the locks have different ids).
 * short_amount: the user locks 80 % of the agreed amount; wrong_receiver: the user locks to their own address.
 */
export async function lockSwap(options: ScenarioOptions, cheat?: LockingCheat): Promise<LockedSwap> {
  const { src, dst } = options;
  const parties = options.parties ?? { user: 1, lp: 2 };
  const E = options.E ?? 60;
  const Tol = options.Tol ?? 120;
  const amountOut = options.amountOut ?? 10n ** 18n;
  const amountIn = options.amountIn ?? (amountOut * 99n) / 100n;
  const user = src.accounts[parties.user]!.address;
  const lp = src.accounts[parties.lp]!.address;
  const lpId = lpIdOf(lp);
  const preimage = hexlify(randomBytes(32));
  const hashlock = hashlockOf(preimage);
  if (options.didChain) await registerDids(options.didChain, { [lpId]: lp, [userDid(user)]: user });

  const T = Math.max(await src.latestTimestamp(), await dst.latestTimestamp()) + 10;
  const R = T + 3 * E + 3 * Tol + 60;
  const times = {
    agreementReachedTime: T,
    expectedSingleStepTime: E,
    tolerantSingleStepTime: Tol,
    earliestRefundTime: R,
  };
  const native = '0x0000000000000000000000000000000000000000';
  const agreement = signAgreement(
    {
      srcChainId: BigInt(options.srcSystemChainId),
      srcAddress: user,
      srcToken: native,
      srcAmount: amountOut.toString(),
      dstChainId: BigInt(options.dstSystemChainId),
      dstAddress: user,
      dstToken: native,
      dstAmount: amountIn.toString(),
      dstNativeAmount: '0',
      requestor: user,
      lpId,
      agreementReachedTime: BigInt(T),
      expectedSingleStepTime: BigInt(E),
      tolerantSingleStepTime: BigInt(Tol),
      earliestRefundTime: BigInt(R),
    },
    { userKey: src.accounts[parties.user]!.privateKey, lpKey: src.accounts[parties.lp]!.privateKey },
    { srcEvmChainId: src.chainId, dstEvmChainId: dst.chainId },
  );
  const lockedOut = cheat === 'short_amount' ? (amountOut * 80n) / 100n : amountOut;
  // The bid the lock carries is that of the terms it claims: a TransferOut whose own fields do not hash to
  // its bid is nobody's swap (the classifier ignores it), so a short lock names the bid of its short terms.
  const bidId = bidIdOf({ ...agreement, srcAmount: lockedOut.toString() });
  const outSide: SwapSide = {
    sender: user,
    receiver: cheat === 'wrong_receiver' ? user : (options.outReceiver ?? lp),
    token: native,
    tokenAmount: lockedOut,
    ethAmount: 0n,
    hashlock,
    ...times,
  };
  const answer = options.lpAnswer ?? 'ok';
  const inSide: SwapSide = {
    ...outSide,
    sender: lp,
    receiver: user,
    tokenAmount: answer === 'wrong_amount' ? (amountIn * 90n) / 100n : amountIn,
    hashlock: answer === 'wrong_hashlock' ? hashlockOf(hexlify(randomBytes(32))) : hashlock,
  };
  const outId = computeTransferId(outSide, true, src.chainId);
  const inId = computeTransferId(inSide, false, dst.chainId);

  const steps: SwapStep[] = [];
  // The cheats keep the genuine signatures: the lock claims terms the LP never signed (short_amount), or pays
  // a receiver that is not the LP's (wrong_receiver: the receiver is not hashed, the bid is the genuine one).
  const outExtras = {
    dstChainId: options.dstSystemChainId,
    dstAddress: BigInt(user),
    bidId,
    tokenDst: 0n,
    amountDst: amountIn,
    nativeAmountDst: 0n,
    requestor: agreement.requestor,
    lpId,
    userSign: agreement.userSign,
    lpSign: agreement.lpSign,
  };
  const locks = options.lock ?? true;
  if (locks) {
    await sendStep(
      steps,
      'transferOut',
      src,
      parties.user,
      T + 1,
      'transferOut',
      transferOutArgs(outSide, outExtras),
      lockedOut,
    );
  }
  if (locks && answer !== 'none') {
    await sendStep(
      steps,
      'transferIn',
      dst,
      parties.lp,
      T + 2,
      'transferIn',
      transferInArgs(inSide, options.srcSystemChainId, outId),
      inSide.tokenAmount,
    );
  }
  return {
    bidId,
    preimage,
    hashlock,
    agreed: { amountOut, amountIn, lpReceiverOnSrc: lp, userReceiverOnDst: user },
    agreement,
    lpId,
    userDid: userDid(user),
    srcSystemChainId: options.srcSystemChainId,
    outExtras,
    out: { ...outSide, transferId: outId },
    in: { ...inSide, transferId: inId },
    times: { T, E, Tol, R },
    steps,
  };
}

/**
 * Runs one swap of the given kind. Honest: transferOut, transferIn, confirmOut (user), confirmIn (LP).
 * short_amount / wrong_receiver: a cheat while locking (see lockSwap), then confirmed as usual.
 * confirm_in_without_confirm_out: the user never confirms out and, once the LP's window has passed, confirms
 * the LP's transferIn as a non-LP with the preimage (the known cheat).
 */
export async function runSwap(scenario: SwapScenario, options: ScenarioOptions): Promise<ExecutedSwap> {
  const parties = options.parties ?? { user: 1, lp: 2 };
  const cheat = scenario === 'short_amount' || scenario === 'wrong_receiver' ? scenario : undefined;
  const locked = await lockSwap(options, cheat);
  const { src, dst } = options;
  const { T, E, Tol } = locked.times;
  const { steps, preimage } = locked;
  if (scenario === 'confirm_in_without_confirm_out') {
    // The LP's own window ends at T+3E+Tol; from then on anyone else may confirm in with the preimage.
    await sendStep(
      steps,
      'confirmIn',
      dst,
      parties.user,
      T + 3 * E + Tol,
      'confirmTransferIn',
      confirmArgs(locked.in, preimage),
    );
  } else {
    await sendStep(
      steps,
      'confirmOut',
      src,
      parties.user,
      T + 3,
      'confirmTransferOut',
      confirmArgs(locked.out, preimage),
    );
    await sendStep(
      steps,
      'confirmIn',
      dst,
      parties.lp,
      T + 4,
      'confirmTransferIn',
      confirmArgs(locked.in, preimage),
    );
  }
  return { scenario, ...locked };
}

/** Sends one swap step at an exact block timestamp and records it; a revert is an error naming the step. */
async function sendStep(
  steps: SwapStep[],
  step: SwapStep['step'],
  chain: DevnetChain,
  account: number,
  at: number,
  method: string,
  args: unknown[],
  value = 0n,
): Promise<void> {
  const contract = new Contract(chain.contracts.otmoic, SWAP, chain.wallet(account));
  const attempt = await callAt(chain, at, contract, method, args, value);
  if (!attempt.ok)
    throw new Error(`${step}: ${method} failed: ${attempt.revert?.name ?? String(attempt.error)}`);
  steps.push({
    step,
    chainId: chain.chainId,
    txHash: attempt.receipt.hash,
    blockNumber: attempt.receipt.blockNumber,
    timestamp: attempt.timestamp,
    from: chain.accounts[account]!.address,
  });
}

/**
 * One step of a locked swap at an exact block timestamp, by any account, without throwing on a revert: for
 * tests that act at a window's bounds (the bound +1 is refused by the contract).
 */
export async function tryStep(
  locked: LockedSwap,
  chain: DevnetChain,
  step: 'transferOut' | 'transferIn' | 'confirmOut' | 'confirmIn' | 'refundOut' | 'refundIn',
  account: number,
  at: number,
): Promise<{ ok: boolean; revert?: string; txHash?: string; timestamp?: number }> {
  const side = step.endsWith('Out') ? locked.out : locked.in;
  const call: Record<typeof step, [string, unknown[], bigint]> = {
    transferOut: ['transferOut', transferOutArgs(locked.out, locked.outExtras), locked.out.tokenAmount],
    transferIn: [
      'transferIn',
      transferInArgs(locked.in, locked.srcSystemChainId, locked.out.transferId),
      locked.in.tokenAmount,
    ],
    confirmOut: ['confirmTransferOut', confirmArgs(side, locked.preimage), 0n],
    confirmIn: ['confirmTransferIn', confirmArgs(side, locked.preimage), 0n],
    refundOut: ['refundTransferOut', refundArgs(side), 0n],
    refundIn: ['refundTransferIn', refundArgs(side), 0n],
  };
  const [method, args, value] = call[step];
  const contract = new Contract(chain.contracts.otmoic, SWAP, chain.wallet(account));
  const attempt = await callAt(chain, at, contract, method, args, value);
  if (!attempt.ok) return { ok: false, revert: attempt.revert?.name ?? String(attempt.error) };
  return { ok: true, txHash: attempt.receipt.hash, timestamp: attempt.timestamp };
}
