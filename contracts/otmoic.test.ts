// Otmoic against a real Hardhat chain: every bound of the otmoic.md §3 time-window table at bound-1,
// bound and bound+1 s, for the user/LP and for other callers, with exact block timestamps; the custom
// errors where the table says; honest swaps (ERC-20 and native) with fees; refunds after R.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contract, ZeroAddress, hexlify, randomBytes } from 'ethers';
import type { TransactionReceipt } from 'ethers';
import { compileContracts } from './compile.js';
import type { CompiledContracts } from './compile.js';
import { startDevnet } from '../shared/devnet/devnet.js';
import type { Devnet, DevnetChain } from '../shared/devnet/devnet.js';
import {
  callAt,
  computeTransferId,
  confirmArgs,
  hashlockOf,
  outcome,
  refundArgs,
  transferInArgs,
  transferOutArgs,
} from './otmoic-test-kit.js';
import type { OutExtras, SwapSide } from './otmoic-test-kit.js';

const SRC_CHAIN = 97;
const DST_CHAIN = 11155420;
const E = 60;
const TOL = 120;
const OWNER = 0;
const USER = 2;
const LP = 3;
const RELAY = 5;
const TOLL = 9;
const FEE_BASIS_POINTS = 30n;

let devnet: Devnet;
let compiled: CompiledContracts;

beforeAll(async () => {
  compiled = await compileContracts();
  devnet = await startDevnet({ chains: [{ chainId: SRC_CHAIN }, { chainId: DST_CHAIN }], compiled });
  for (const chain of devnet.chains) {
    const owner = otmoicOf(chain, OWNER);
    await (await owner.getFunction('setBasisPointsRate')(FEE_BASIS_POINTS)).wait();
    await (await owner.getFunction('setTollAddress')(chain.accounts[TOLL]!.address)).wait();
    for (const party of [USER, LP]) {
      await (
        await tokenOf(chain, party).getFunction('approve')(chain.contracts.otmoic, 2n ** 256n - 1n)
      ).wait();
    }
  }
});

afterAll(async () => {
  await devnet?.stop();
});

function otmoicOf(chain: DevnetChain, account: number): Contract {
  return new Contract(chain.contracts.otmoic, compiled.Otmoic.abi, chain.wallet(account));
}

function tokenOf(chain: DevnetChain, account: number): Contract {
  return new Contract(chain.contracts.token, compiled.TestToken.abi, chain.wallet(account));
}

function address(chain: DevnetChain, account: number): string {
  return chain.accounts[account]!.address;
}

interface Swap {
  preimage: string;
  out: SwapSide;
  in: SwapSide;
  extras: OutExtras;
}

/** One agreement at time T: the user sells `outAmount` of `outToken`, the LP pays `inAmount` (+ `inEth`). */
function makeSwap(
  src: DevnetChain,
  dst: DevnetChain,
  T: number,
  opts: {
    outToken: string;
    outAmount: bigint;
    inToken: string;
    inAmount: bigint;
    inEth: bigint;
    refundTime?: number;
  },
): Swap {
  const preimage = hexlify(randomBytes(32));
  const common = {
    hashlock: hashlockOf(preimage),
    agreementReachedTime: T,
    expectedSingleStepTime: E,
    tolerantSingleStepTime: TOL,
    earliestRefundTime: opts.refundTime ?? T + 3 * E + 3 * TOL + 1,
  };
  return {
    preimage,
    out: {
      ...common,
      sender: address(src, USER),
      receiver: address(src, LP),
      token: opts.outToken,
      tokenAmount: opts.outAmount,
      ethAmount: 0n,
    },
    in: {
      ...common,
      sender: address(dst, LP),
      receiver: address(dst, USER),
      token: opts.inToken,
      tokenAmount: opts.inAmount,
      ethAmount: opts.inEth,
    },
    extras: {
      dstChainId: 614,
      dstAddress: BigInt(address(dst, USER)),
      bidId: hexlify(randomBytes(32)),
      tokenDst: BigInt(opts.inToken),
      amountDst: opts.inAmount,
      nativeAmountDst: opts.inEth,
      requestor: 'did:requestor',
      lpId: 'lp-test-01',
      userSign: 'userSign',
      lpSign: 'lpSign',
    },
  };
}

function nativeValue(side: SwapSide): bigint {
  return side.token === ZeroAddress ? side.tokenAmount + side.ethAmount : side.ethAmount;
}

describe('time windows of otmoic.md §3 (bounds inclusive, exact block timestamps)', () => {
  let chain: DevnetChain;
  let T: number;
  let snapshotId: string;
  let swap: Swap;

  beforeAll(async () => {
    chain = devnet.chain(SRC_CHAIN);
    // Far enough ahead that every setup block (timestamps +1 s each) stays before T.
    T = (await chain.latestTimestamp()) + 1000;
    swap = makeSwap(chain, chain, T, {
      outToken: chain.contracts.token,
      outAmount: 10n ** 18n,
      inToken: chain.contracts.token,
      inAmount: 99n * 10n ** 16n,
      inEth: 0n,
    });
    snapshotId = await chain.snapshot();
  });

  /** Back to the state before any lock (Hardhat drops a snapshot once reverted to, so take a new one). */
  async function fresh(): Promise<void> {
    await chain.revert(snapshotId);
    snapshotId = await chain.snapshot();
  }

  const okAt = (offset: number): string => `ok@${T + offset}`;

  async function lockBoth(): Promise<void> {
    const out = await callAt(
      chain,
      T,
      otmoicOf(chain, USER),
      'transferOut',
      transferOutArgs(swap.out, swap.extras),
    );
    expect(outcome(out)).toBe(`ok@${T}`);
    const lock = await callAt(
      chain,
      T + 1,
      otmoicOf(chain, LP),
      'transferIn',
      transferInArgs(swap.in, SRC_CHAIN, computeTransferId(swap.out, true, SRC_CHAIN)),
    );
    expect(outcome(lock)).toBe(`ok@${T + 1}`);
  }

  describe('transferOut: user, now <= T+E', () => {
    for (const offset of [E - 1, E]) {
      it(`user at T+${offset}: ok`, async () => {
        await fresh();
        const result = await callAt(
          chain,
          T + offset,
          otmoicOf(chain, USER),
          'transferOut',
          transferOutArgs(swap.out, swap.extras),
        );
        expect(outcome(result)).toBe(okAt(offset));
      });
    }
    it(`user at T+${E + 1}: ExpiredOp("transfer out", T+E)`, async () => {
      await fresh();
      const result = await callAt(
        chain,
        T + E + 1,
        otmoicOf(chain, USER),
        'transferOut',
        transferOutArgs(swap.out, swap.extras),
      );
      expect(outcome(result)).toBe(`ExpiredOp(transfer out,${T + E})`);
    });

    it('another caller (relay) inside the window: InvalidSender()', async () => {
      await fresh();
      const result = await callAt(
        chain,
        T + E - 1,
        otmoicOf(chain, RELAY),
        'transferOut',
        transferOutArgs(swap.out, swap.extras),
      );
      expect(outcome(result)).toBe('InvalidSender()');
    });
  });

  describe('transferOut: R > T+3E+3Tol', () => {
    const lastConfirm = 3 * E + 3 * TOL;
    const cases: [number, string][] = [
      [lastConfirm - 1, 'InvalidRefundTime()'],
      [lastConfirm, 'InvalidRefundTime()'],
      [lastConfirm + 1, 'ok'],
    ];
    for (const [offset, expected] of cases) {
      it(`R = T+${offset}: ${expected}`, async () => {
        await fresh();
        const side = { ...swap.out, earliestRefundTime: T + offset };
        const result = await callAt(
          chain,
          T,
          otmoicOf(chain, USER),
          'transferOut',
          transferOutArgs(side, swap.extras),
        );
        expect(outcome(result)).toBe(expected === 'ok' ? `ok@${T}` : expected);
      });
    }
  });

  describe('transferIn: LP, now <= T+2E', () => {
    const srcTransferId = (): string => computeTransferId(swap.out, true, SRC_CHAIN);

    // Not in the table, but the same rule protects the user: an LP-side R inside the confirm windows
    // would let the LP take its funds back while the user may still confirm.
    it('an R not after T+3E+3Tol is refused on this side too: InvalidRefundTime()', async () => {
      await fresh();
      const side = { ...swap.in, earliestRefundTime: T + 3 * E + 3 * TOL };
      const result = await callAt(
        chain,
        T + 1,
        otmoicOf(chain, LP),
        'transferIn',
        transferInArgs(side, SRC_CHAIN, srcTransferId()),
      );
      expect(outcome(result)).toBe('InvalidRefundTime()');
    });
    for (const offset of [2 * E - 1, 2 * E]) {
      it(`LP at T+${offset}: ok`, async () => {
        await fresh();
        const result = await callAt(
          chain,
          T + offset,
          otmoicOf(chain, LP),
          'transferIn',
          transferInArgs(swap.in, SRC_CHAIN, srcTransferId()),
        );
        expect(outcome(result)).toBe(okAt(offset));
      });
    }
    it(`LP at T+${2 * E + 1}: ExpiredOp("transfer in", T+2E)`, async () => {
      await fresh();
      const result = await callAt(
        chain,
        T + 2 * E + 1,
        otmoicOf(chain, LP),
        'transferIn',
        transferInArgs(swap.in, SRC_CHAIN, srcTransferId()),
      );
      expect(outcome(result)).toBe(`ExpiredOp(transfer in,${T + 2 * E})`);
    });

    it('another caller (relay) inside the window: InvalidSender()', async () => {
      await fresh();
      const result = await callAt(
        chain,
        T + 2 * E - 1,
        otmoicOf(chain, RELAY),
        'transferIn',
        transferInArgs(swap.in, SRC_CHAIN, srcTransferId()),
      );
      expect(outcome(result)).toBe('InvalidSender()');
    });
  });

  /** Runs `method` as `caller` at T+offset on a freshly locked swap and returns the outcome string. */
  async function confirmOrRefundAt(
    side: 'out' | 'in',
    method: 'confirm' | 'refund',
    caller: number,
    offset: number,
    preimage = swap.preimage,
  ): Promise<string> {
    await fresh();
    await lockBoth();
    const terms = side === 'out' ? swap.out : swap.in;
    const name = `${method}Transfer${side === 'out' ? 'Out' : 'In'}`;
    const args = method === 'confirm' ? confirmArgs(terms, preimage) : refundArgs(terms);
    return outcome(await callAt(chain, T + offset, otmoicOf(chain, caller), name, args));
  }

  describe('confirmTransferOut: user until T+3E', () => {
    for (const offset of [3 * E - 1, 3 * E]) {
      it(`user at T+${offset}: ok`, async () => {
        expect(await confirmOrRefundAt('out', 'confirm', USER, offset)).toBe(okAt(offset));
      });
    }
    it(`user at T+${3 * E + 1}: ExpiredOp`, async () => {
      expect(await confirmOrRefundAt('out', 'confirm', USER, 3 * E + 1)).toBe(
        `ExpiredOp(user confirm out,${T + 3 * E})`,
      );
    });
  });

  describe('confirmTransferOut: anyone else in [T+3E+2Tol, T+3E+3Tol]', () => {
    const start = 3 * E + 2 * TOL;
    const end = 3 * E + 3 * TOL;
    const notInWindow = (): string => `NotInOpWindow(non-user confirm out,${T + start},${T + end})`;
    it(`relay at T+${start - 1}: NotInOpWindow`, async () => {
      expect(await confirmOrRefundAt('out', 'confirm', RELAY, start - 1)).toBe(notInWindow());
    });
    for (const offset of [start, start + 1, end - 1, end]) {
      it(`relay at T+${offset}: ok`, async () => {
        expect(await confirmOrRefundAt('out', 'confirm', RELAY, offset)).toBe(okAt(offset));
      });
    }
    it(`relay at T+${end + 1}: NotInOpWindow`, async () => {
      expect(await confirmOrRefundAt('out', 'confirm', RELAY, end + 1)).toBe(notInWindow());
    });
    it('the LP is "anyone else" here: refused inside the user window', async () => {
      expect(await confirmOrRefundAt('out', 'confirm', LP, 3 * E)).toBe(notInWindow());
    });
  });

  describe('confirmTransferIn: LP until T+3E+Tol', () => {
    const deadline = 3 * E + TOL;
    for (const offset of [deadline - 1, deadline]) {
      it(`LP at T+${offset}: ok`, async () => {
        expect(await confirmOrRefundAt('in', 'confirm', LP, offset)).toBe(okAt(offset));
      });
    }
    it(`LP at T+${deadline + 1}: ExpiredOp`, async () => {
      expect(await confirmOrRefundAt('in', 'confirm', LP, deadline + 1)).toBe(
        `ExpiredOp(lp confirm in,${T + deadline})`,
      );
    });
  });

  describe('confirmTransferIn: anyone else in [T+3E+Tol, T+3E+2Tol]', () => {
    const start = 3 * E + TOL;
    const end = 3 * E + 2 * TOL;
    const notInWindow = (): string => `NotInOpWindow(non-lp confirm in,${T + start},${T + end})`;
    for (const [who, caller] of [
      ['relay', RELAY],
      ['user', USER],
    ] as const) {
      it(`${who} at T+${start - 1}: NotInOpWindow`, async () => {
        expect(await confirmOrRefundAt('in', 'confirm', caller, start - 1)).toBe(notInWindow());
      });
      for (const offset of [start, start + 1, end - 1, end]) {
        it(`${who} at T+${offset}: ok`, async () => {
          expect(await confirmOrRefundAt('in', 'confirm', caller, offset)).toBe(okAt(offset));
        });
      }
      it(`${who} at T+${end + 1}: NotInOpWindow`, async () => {
        expect(await confirmOrRefundAt('in', 'confirm', caller, end + 1)).toBe(notInWindow());
      });
    }
  });

  describe('refunds: anyone, now > R', () => {
    const R = 3 * E + 3 * TOL + 1;
    for (const side of ['out', 'in'] as const) {
      for (const [who, caller] of [
        ['relay', RELAY],
        ['sender', side === 'out' ? USER : LP],
      ] as const) {
        it(`refund ${side} by ${who} at R-1 and R: NotUnlock; at R+1: ok`, async () => {
          const notUnlock = `NotUnlock(refund ${side},${T + R})`;
          expect(await confirmOrRefundAt(side, 'refund', caller, R - 1)).toBe(notUnlock);
          expect(await confirmOrRefundAt(side, 'refund', caller, R)).toBe(notUnlock);
          expect(await confirmOrRefundAt(side, 'refund', caller, R + 1)).toBe(okAt(R + 1));
        });
      }
    }
  });

  describe('other custom errors', () => {
    it('a wrong preimage: InvalidHashlock()', async () => {
      const wrong = hexlify(randomBytes(32));
      expect(await confirmOrRefundAt('out', 'confirm', USER, 3 * E, wrong)).toBe('InvalidHashlock()');
      expect(await confirmOrRefundAt('in', 'confirm', LP, 3 * E, wrong)).toBe('InvalidHashlock()');
    });

    it('confirm twice, refund after confirm, lock twice, unknown swap: InvalidStatus()', async () => {
      expect(await confirmOrRefundAt('out', 'confirm', USER, 3 * E)).toBe(okAt(3 * E));
      const user = otmoicOf(chain, USER);
      const again = await callAt(
        chain,
        T + 3 * E + 1,
        otmoicOf(chain, RELAY),
        'confirmTransferOut',
        confirmArgs(swap.out, swap.preimage),
      );
      expect(outcome(again)).toBe(
        'NotInOpWindow(non-user confirm out,' + (T + 3 * E + 2 * TOL) + ',' + (T + 3 * E + 3 * TOL) + ')',
      );
      const inWindowAgain = await callAt(
        chain,
        T + 3 * E + 2 * TOL,
        otmoicOf(chain, RELAY),
        'confirmTransferOut',
        confirmArgs(swap.out, swap.preimage),
      );
      expect(outcome(inWindowAgain)).toBe('InvalidStatus()');
      const refundAfterConfirm = await callAt(
        chain,
        T + 3 * E + 3 * TOL + 2,
        user,
        'refundTransferOut',
        refundArgs(swap.out),
      );
      expect(outcome(refundAfterConfirm)).toBe('InvalidStatus()');

      await fresh();
      await lockBoth();
      const duplicate = await callAt(
        chain,
        T + 2,
        user,
        'transferOut',
        transferOutArgs(swap.out, swap.extras),
      );
      expect(outcome(duplicate)).toBe('InvalidStatus()');
      const unknown = { ...swap.out, tokenAmount: swap.out.tokenAmount + 1n };
      const confirmUnknown = await callAt(
        chain,
        T + 3,
        user,
        'confirmTransferOut',
        confirmArgs(unknown, swap.preimage),
      );
      expect(outcome(confirmUnknown)).toBe('InvalidStatus()');
    });

    it('zero amount or a native value that does not match: InvalidAmount()', async () => {
      await fresh();
      const user = otmoicOf(chain, USER);
      const zero = { ...swap.out, tokenAmount: 0n };
      expect(outcome(await callAt(chain, T, user, 'transferOut', transferOutArgs(zero, swap.extras)))).toBe(
        'InvalidAmount()',
      );
      // ERC-20 lock with native coin attached.
      expect(
        outcome(await callAt(chain, T + 1, user, 'transferOut', transferOutArgs(swap.out, swap.extras), 1n)),
      ).toBe('InvalidAmount()');
      // Native lock whose msg.value differs from the amount.
      const native = { ...swap.out, token: ZeroAddress };
      expect(
        outcome(
          await callAt(
            chain,
            T + 2,
            user,
            'transferOut',
            transferOutArgs(native, swap.extras),
            native.tokenAmount - 1n,
          ),
        ),
      ).toBe('InvalidAmount()');
      // Native transferIn must carry token_amount + eth_amount.
      const nativeIn = { ...swap.in, token: ZeroAddress, ethAmount: 5n };
      const lp = otmoicOf(chain, LP);
      const srcId = computeTransferId(swap.out, true, SRC_CHAIN);
      expect(
        outcome(
          await callAt(
            chain,
            T + 3,
            lp,
            'transferIn',
            transferInArgs(nativeIn, SRC_CHAIN, srcId),
            nativeIn.tokenAmount,
          ),
        ),
      ).toBe('InvalidAmount()');
      expect(
        outcome(
          await callAt(
            chain,
            T + 4,
            lp,
            'transferIn',
            transferInArgs(nativeIn, SRC_CHAIN, srcId),
            nativeIn.tokenAmount + 5n,
          ),
        ),
      ).toBe(`ok@${T + 4}`);
    });
  });
});

/** Native balance change of `account` between two blocks, adding back the gas it paid in `receipts`. */
async function nativeDelta(
  chain: DevnetChain,
  account: string,
  before: bigint,
  receipts: TransactionReceipt[],
): Promise<bigint> {
  const after = await chain.provider.getBalance(account);
  const gasPaid = receipts.filter((r) => r.from === account).reduce((sum, r) => sum + r.fee, 0n);
  return after - before + gasPaid;
}

describe('honest swap end to end (two chains, fees to tollAddress)', () => {
  for (const kind of ['ERC-20', 'native coin'] as const) {
    it(`${kind}: transferOut, transferIn, confirmTransferOut, confirmTransferIn`, async () => {
      const src = devnet.chain(SRC_CHAIN);
      const dst = devnet.chain(DST_CHAIN);
      const native = kind === 'native coin';
      const T = Math.max(await src.latestTimestamp(), await dst.latestTimestamp()) + 10;
      const swap = makeSwap(src, dst, T, {
        outToken: native ? ZeroAddress : src.contracts.token,
        outAmount: 10n ** 18n,
        inToken: native ? ZeroAddress : dst.contracts.token,
        inAmount: 99n * 10n ** 16n,
        inEth: 10n ** 16n,
      });
      const toll = { src: address(src, TOLL), dst: address(dst, TOLL) };
      const balance = async (chain: DevnetChain, token: string, account: string): Promise<bigint> =>
        token === ZeroAddress
          ? chain.provider.getBalance(account)
          : ((await tokenOf(chain, OWNER).getFunction('balanceOf')(account)) as bigint);
      const before = {
        userSrc: await balance(src, swap.out.token, swap.out.sender),
        lpSrc: await balance(src, swap.out.token, swap.out.receiver),
        tollSrc: await balance(src, swap.out.token, toll.src),
        lpDst: await balance(dst, swap.in.token, swap.in.sender),
        userDst: await balance(dst, swap.in.token, swap.in.receiver),
        tollDst: await balance(dst, swap.in.token, toll.dst),
        userDstNative: await dst.provider.getBalance(swap.in.receiver),
        tollDstNative: await dst.provider.getBalance(toll.dst),
      };

      const outId = computeTransferId(swap.out, true, SRC_CHAIN);
      const inId = computeTransferId(swap.in, false, DST_CHAIN);
      const steps = [
        await callAt(
          src,
          T + 1,
          otmoicOf(src, USER),
          'transferOut',
          transferOutArgs(swap.out, swap.extras),
          nativeValue(swap.out),
        ),
        await callAt(
          dst,
          T + 2,
          otmoicOf(dst, LP),
          'transferIn',
          transferInArgs(swap.in, SRC_CHAIN, outId),
          nativeValue(swap.in),
        ),
        await callAt(
          src,
          T + 3,
          otmoicOf(src, USER),
          'confirmTransferOut',
          confirmArgs(swap.out, swap.preimage),
        ),
        await callAt(dst, T + 4, otmoicOf(dst, LP), 'confirmTransferIn', confirmArgs(swap.in, swap.preimage)),
      ];
      expect(steps.map(outcome)).toEqual([`ok@${T + 1}`, `ok@${T + 2}`, `ok@${T + 3}`, `ok@${T + 4}`]);
      const receipts = steps
        .map((step) => (step.ok ? step.receipt : undefined))
        .filter((r) => r !== undefined);
      const srcReceipts = receipts.slice(0, 1).concat(receipts.slice(2, 3));
      const dstReceipts = receipts.slice(1, 2).concat(receipts.slice(3, 4));

      // The contract's ids are the rule's ids.
      const otmoic = otmoicOf(src, OWNER);
      const logged = receipts.map((r) => otmoic.interface.parseLog(r.logs.at(-1)!)!);
      expect(logged.map((l) => l.name)).toEqual([
        'LogNewTransferOut',
        'LogNewTransferIn',
        'LogTransferOutConfirmed',
        'LogTransferInConfirmed',
      ]);
      expect(logged.map((l) => l.args[0])).toEqual([outId, inId, outId, inId]);
      expect(logged[2]!.args[1]).toBe(swap.preimage);

      const outFee = (swap.out.tokenAmount * FEE_BASIS_POINTS) / 10_000n;
      const inFee = (swap.in.tokenAmount * FEE_BASIS_POINTS) / 10_000n;
      const ethFee = (swap.in.ethAmount * FEE_BASIS_POINTS) / 10_000n;
      expect([...(await otmoicOf(src, OWNER).getFunction('swapStatus')(outId))]).toEqual([2n, outFee, 0n]);
      expect([...(await otmoicOf(dst, OWNER).getFunction('swapStatus')(inId))]).toEqual([2n, inFee, ethFee]);

      if (native) {
        expect(await nativeDelta(src, swap.out.sender, before.userSrc, srcReceipts)).toBe(
          -swap.out.tokenAmount,
        );
        expect(await nativeDelta(src, swap.out.receiver, before.lpSrc, srcReceipts)).toBe(
          swap.out.tokenAmount - outFee,
        );
        expect(await nativeDelta(src, toll.src, before.tollSrc, [])).toBe(outFee);
        expect(await nativeDelta(dst, swap.in.sender, before.lpDst, dstReceipts)).toBe(
          -(swap.in.tokenAmount + swap.in.ethAmount),
        );
        expect(await nativeDelta(dst, swap.in.receiver, before.userDst, dstReceipts)).toBe(
          swap.in.tokenAmount - inFee + swap.in.ethAmount - ethFee,
        );
        expect(await nativeDelta(dst, toll.dst, before.tollDst, [])).toBe(inFee + ethFee);
      } else {
        expect((await balance(src, swap.out.token, swap.out.sender)) - before.userSrc).toBe(
          -swap.out.tokenAmount,
        );
        expect((await balance(src, swap.out.token, swap.out.receiver)) - before.lpSrc).toBe(
          swap.out.tokenAmount - outFee,
        );
        expect((await balance(src, swap.out.token, toll.src)) - before.tollSrc).toBe(outFee);
        expect((await balance(dst, swap.in.token, swap.in.sender)) - before.lpDst).toBe(-swap.in.tokenAmount);
        expect((await balance(dst, swap.in.token, swap.in.receiver)) - before.userDst).toBe(
          swap.in.tokenAmount - inFee,
        );
        expect((await balance(dst, swap.in.token, toll.dst)) - before.tollDst).toBe(inFee);
        // The native extra (gas money for the user) is paid out too, minus its own fee.
        expect(await nativeDelta(dst, swap.in.receiver, before.userDstNative, dstReceipts)).toBe(
          swap.in.ethAmount - ethFee,
        );
        expect(await nativeDelta(dst, toll.dst, before.tollDstNative, [])).toBe(ethFee);
      }
    });
  }

  it('refunds after R return both sides in full, without fee', async () => {
    const src = devnet.chain(SRC_CHAIN);
    const dst = devnet.chain(DST_CHAIN);
    const T = Math.max(await src.latestTimestamp(), await dst.latestTimestamp()) + 10;
    const swap = makeSwap(src, dst, T, {
      outToken: src.contracts.token,
      outAmount: 10n ** 18n,
      inToken: ZeroAddress,
      inAmount: 10n ** 17n,
      inEth: 10n ** 15n,
    });
    const R = swap.out.earliestRefundTime;
    const userTokens = async (): Promise<bigint> =>
      (await tokenOf(src, OWNER).getFunction('balanceOf')(swap.out.sender)) as bigint;
    const userBefore = await userTokens();
    const lpBefore = await dst.provider.getBalance(swap.in.sender);

    const outId = computeTransferId(swap.out, true, SRC_CHAIN);
    const inId = computeTransferId(swap.in, false, DST_CHAIN);
    const locks = [
      await callAt(src, T + 1, otmoicOf(src, USER), 'transferOut', transferOutArgs(swap.out, swap.extras)),
      await callAt(
        dst,
        T + 2,
        otmoicOf(dst, LP),
        'transferIn',
        transferInArgs(swap.in, SRC_CHAIN, outId),
        nativeValue(swap.in),
      ),
    ];
    expect(locks.map(outcome)).toEqual([`ok@${T + 1}`, `ok@${T + 2}`]);
    expect(await userTokens()).toBe(userBefore - swap.out.tokenAmount);

    // Nobody confirms; after R the relay refunds both sides.
    const refunds = [
      await callAt(src, R + 1, otmoicOf(src, RELAY), 'refundTransferOut', refundArgs(swap.out)),
      await callAt(dst, R + 1, otmoicOf(dst, RELAY), 'refundTransferIn', refundArgs(swap.in)),
    ];
    expect(refunds.map(outcome)).toEqual([`ok@${R + 1}`, `ok@${R + 1}`]);
    expect(await userTokens()).toBe(userBefore);
    const lpReceipts = locks[1]!.ok ? [locks[1]!.receipt] : [];
    expect(await nativeDelta(dst, swap.in.sender, lpBefore, lpReceipts)).toBe(0n);
    expect((await otmoicOf(src, OWNER).getFunction('swapStatus')(outId))[0]).toBe(3n);
    expect((await otmoicOf(dst, OWNER).getFunction('swapStatus')(inId))[0]).toBe(3n);

    const logs = refunds.map((r) =>
      r.ok ? otmoicOf(src, OWNER).interface.parseLog(r.receipt.logs.at(-1)!) : null,
    );
    expect(logs.map((l) => [l?.name, l?.args[0]])).toEqual([
      ['LogTransferOutRefunded', outId],
      ['LogTransferInRefunded', inId],
    ]);
  });

  it('only the owner sets the fee (never above 100 %) and the toll address (never zero)', async () => {
    const chain = devnet.chain(SRC_CHAIN);
    const now = (await chain.latestTimestamp()) + 1;
    expect(outcome(await callAt(chain, now, otmoicOf(chain, USER), 'setBasisPointsRate', [1n]))).toBe(
      'NotOwner()',
    );
    expect(
      outcome(await callAt(chain, now + 1, otmoicOf(chain, OWNER), 'setBasisPointsRate', [10_001n])),
    ).toBe('InvalidBasisPointsRate(10001)');
    expect(await otmoicOf(chain, USER).getFunction('basisPointsRate')()).toBe(FEE_BASIS_POINTS);
    expect(
      outcome(await callAt(chain, now + 2, otmoicOf(chain, OWNER), 'setTollAddress', [ZeroAddress])),
    ).toBe('InvalidTollAddress()');
    expect(
      outcome(await callAt(chain, now + 3, otmoicOf(chain, USER), 'setTollAddress', [address(chain, USER)])),
    ).toBe('NotOwner()');
    expect(await otmoicOf(chain, USER).getFunction('tollAddress')()).toBe(address(chain, TOLL));
  });
});
