// One realistic swap per kind: honest, or the party that breaks it in each of the cases 1–7 (the classifier's
// table, services/classifier/README.md). Every step is a real transaction at a pinned block time.
import { parseEther } from 'ethers';
import { complaintOfAgreement } from '../otmoic/agreement.js';
import type { ComplaintFields } from '../devnet/complaints.js';
import type { DevnetChain } from '../devnet/devnet.js';
import { lockSwap, runSwap, tryStep, type ScenarioOptions } from '../devnet/swap-scenarios.js';
import { complain, type ComplaintPath, type ComplaintRoute } from './complain.js';
import { rescueByRelay, type RelayRoute } from './relay-rescue.js';

export const SWAP_KINDS = ['honest', '1', '2', '3', '4', '5', '6', '7'] as const;
export type SwapKind = (typeof SWAP_KINDS)[number];

export interface DemoChains {
  src: DevnetChain;
  dst: DevnetChain;
  srcSystemChainId: number;
  dstSystemChainId: number;
  /** The chain of the DID registry and of complaints (the Agent's). */
  didChain: DevnetChain;
}

export interface PlayedSwap {
  kind: SwapKind;
  bidId: string;
  user: string;
  lpId: string;
  /** Chain time after which every window of the swap has closed. */
  settledAfter: number;
  complaint?: ComplaintPath;
  /** The relay's behalf command that confirmed in for a late LP. */
  relayCommand?: string;
}

export const E = 60;
export const Tol = 120;

/** Plays one swap of `kind` between devnet accounts `user` and `lp`, `amount` in tenths of a coin. */
export async function playSwap(
  kind: SwapKind,
  parties: { user: number; lp: number },
  amountTenths: number,
  chains: DemoChains,
  route: ComplaintRoute & { relay?: RelayRoute & { chainId: number } },
): Promise<PlayedSwap> {
  const options: ScenarioOptions = {
    src: chains.src,
    dst: chains.dst,
    srcSystemChainId: chains.srcSystemChainId,
    dstSystemChainId: chains.dstSystemChainId,
    didChain: chains.didChain,
    parties,
    amountOut: parseEther('0.1') * BigInt(amountTenths),
    E,
    Tol,
  };
  const played = (
    swap: { bidId: string; lpId: string; times: { T: number } },
    complaint?: ComplaintPath,
  ) => ({
    kind,
    bidId: swap.bidId,
    user: chains.src.accounts[parties.user]!.address,
    lpId: swap.lpId,
    settledAfter: swap.times.T + 3 * E + 3 * Tol + 5,
    complaint,
  });
  switch (kind) {
    case 'honest':
      return played(await runSwap('honest', options));
    case '1': {
      // The user never locks; the LP complains with the agreement both signed.
      const swap = await lockSwap({ ...options, lock: false });
      const c = complaintOfAgreement(swap.agreement);
      const fields: ComplaintFields = {
        ...c,
        srcChainId: Number(c.srcChainId),
        srcAddress: BigInt(c.srcAddress),
        dstChainId: Number(c.dstChainId),
        dstAddress: BigInt(c.dstAddress),
        expectedSingleStepTime: E,
        tolerantSingleStepTime: Tol,
        earliestRefundTime: Number(c.earliestRefundTime),
        agreementReachedTime: swap.times.T,
      };
      const path = await complain(
        chains.didChain,
        fields,
        { complainant: parties.lp, domain: swap.lpId },
        route,
      );
      return played(swap, path);
    }
    case '2':
      return played(await runSwap(amountTenths % 2 === 0 ? 'short_amount' : 'wrong_receiver', options));
    case '3':
      return played(await lockSwap({ ...options, lpAnswer: 'none' }));
    case '4':
      return played(
        await lockSwap({ ...options, lpAnswer: amountTenths % 2 === 0 ? 'wrong_amount' : 'wrong_hashlock' }),
      );
    case '5':
      // Both locked; the user never reveals the preimage.
      return played(await lockSwap(options));
    case '6': {
      // The user confirms out; the LP never confirms in. Every other time the swap goes the other way, to the
      // relay's chain, and the relay confirms in for the late LP.
      const relay = route.relay;
      if (relay && amountTenths % 2 === 1) {
        const toRelay = chains.src.chainId === relay.chainId ? chains.src : chains.dst;
        const other = toRelay === chains.src ? chains.dst : chains.src;
        const systemOf = (c: DevnetChain) =>
          c === chains.src ? chains.srcSystemChainId : chains.dstSystemChainId;
        const swap = await lockSwap({
          ...options,
          src: other,
          dst: toRelay,
          srcSystemChainId: systemOf(other),
          dstSystemChainId: systemOf(toRelay),
        });
        const out = await tryStep(swap, other, 'confirmOut', parties.user, swap.times.T + 3);
        if (!out.ok) throw new Error(`case 6: confirmOut refused: ${out.revert}`);
        const rescued = await rescueByRelay(swap, toRelay, relay);
        return { ...played(swap), relayCommand: rescued.commandId };
      }
      const swap = await lockSwap(options);
      const out = await tryStep(swap, chains.src, 'confirmOut', parties.user, swap.times.T + 3);
      if (!out.ok) throw new Error(`case 6: confirmOut refused: ${out.revert}`);
      return played(swap);
    }
    case '7':
      return played(await runSwap('confirm_in_without_confirm_out', options));
  }
}
