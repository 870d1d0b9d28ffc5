// Test support for the Otmoic contract: swap terms, argument lists in ABI order, the transferId rule
// computed independently in TypeScript, and "send at an exact block timestamp" with decoded reverts.
import { Contract, keccak256 } from 'ethers';
import { transferId } from '../shared/chain/transfer-id.js';
import type { ContractTransactionResponse, TransactionReceipt } from 'ethers';
import { decodeRevert } from '../shared/devnet/revert-error.js';
import type { DecodedRevert } from '../shared/devnet/revert-error.js';
import type { DevnetChain } from '../shared/devnet/devnet.js';

/** Enough gas for any Otmoic call; fixed so no eth_estimateGas runs against the wrong block time. */
export const GAS_LIMIT = 1_000_000n;

/** Everything both lock sides share (one agreement), plus the side-specific parties and amounts. */
export interface SwapSide {
  sender: string;
  receiver: string;
  token: string;
  tokenAmount: bigint;
  ethAmount: bigint;
  hashlock: string;
  agreementReachedTime: number;
  expectedSingleStepTime: number;
  tolerantSingleStepTime: number;
  earliestRefundTime: number;
}

/** Out-side extras that only travel in the LogNewTransferOut event. */
export interface OutExtras {
  dstChainId: number;
  dstAddress: bigint;
  bidId: string;
  tokenDst: bigint;
  amountDst: bigint;
  nativeAmountDst: bigint;
  requestor: string;
  lpId: string;
  userSign: string;
  lpSign: string;
}

/** The §3 transferId rule (shared/chain/transfer-id.ts), from a swap side. */
export function computeTransferId(side: SwapSide, isOut: boolean, chainId: number | bigint): string {
  return transferId({ ...side, isOut, chainId });
}

export function hashlockOf(preimage: string): string {
  return keccak256(preimage);
}

export function transferOutArgs(side: SwapSide, extras: OutExtras): unknown[] {
  return [
    side.sender,
    side.receiver,
    side.token,
    side.tokenAmount,
    side.hashlock,
    side.expectedSingleStepTime,
    side.tolerantSingleStepTime,
    side.earliestRefundTime,
    extras.dstChainId,
    extras.dstAddress,
    extras.bidId,
    extras.tokenDst,
    extras.amountDst,
    extras.nativeAmountDst,
    side.agreementReachedTime,
    extras.requestor,
    extras.lpId,
    extras.userSign,
    extras.lpSign,
  ];
}

export function transferInArgs(side: SwapSide, srcChainId: number, srcTransferId: string): unknown[] {
  return [
    side.sender,
    side.receiver,
    side.token,
    side.tokenAmount,
    side.ethAmount,
    side.hashlock,
    side.expectedSingleStepTime,
    side.tolerantSingleStepTime,
    side.earliestRefundTime,
    srcChainId,
    srcTransferId,
    side.agreementReachedTime,
  ];
}

export function confirmArgs(side: SwapSide, preimage: string): unknown[] {
  return [
    side.sender,
    side.receiver,
    side.token,
    side.tokenAmount,
    side.ethAmount,
    side.hashlock,
    side.expectedSingleStepTime,
    side.tolerantSingleStepTime,
    side.earliestRefundTime,
    preimage,
    side.agreementReachedTime,
  ];
}

export function refundArgs(side: SwapSide): unknown[] {
  return [
    side.sender,
    side.receiver,
    side.token,
    side.tokenAmount,
    side.ethAmount,
    side.hashlock,
    side.expectedSingleStepTime,
    side.tolerantSingleStepTime,
    side.earliestRefundTime,
    side.agreementReachedTime,
  ];
}

export type Attempt =
  | { ok: true; receipt: TransactionReceipt; timestamp: number }
  | { ok: false; revert: DecodedRevert | undefined; error: unknown };

/**
 * Calls `method` of `contract` (connected to the caller's wallet) in a block whose timestamp is exactly
 * `timestamp`, and reports the mined receipt or the decoded revert (also mined at `timestamp`).
 */
export async function callAt(
  chain: DevnetChain,
  timestamp: number,
  contract: Contract,
  method: string,
  args: unknown[],
  value = 0n,
): Promise<Attempt> {
  await chain.setNextBlockTimestamp(timestamp);
  try {
    // `value` only when non-zero: ethers refuses a value override on a non-payable function.
    const overrides = value === 0n ? { gasLimit: GAS_LIMIT } : { gasLimit: GAS_LIMIT, value };
    const tx = (await contract.getFunction(method)(...args, overrides)) as ContractTransactionResponse;
    const receipt = await tx.wait();
    if (receipt === null) throw new Error(`${method}: no receipt`);
    const block = await chain.provider.getBlock(receipt.blockNumber);
    return { ok: true, receipt, timestamp: block?.timestamp ?? -1 };
  } catch (error) {
    const revert = decodeRevert(error, contract.interface);
    // Hardhat mines a reverting transaction before reporting it, so a contract revert must sit in the
    // block with the pinned timestamp; anything else means the call failed before reaching that block.
    const minedAt = await chain.latestTimestamp();
    if (revert !== undefined && minedAt !== timestamp) {
      throw new Error(
        `${method} reverted with ${revert.name} but the latest block is at ${minedAt}, not ${timestamp}`,
      );
    }
    return { ok: false, revert, error };
  }
}

/** Compact "what happened" for assertions: "ok@<ts>" or "<ErrorName>(<args>)". */
export function outcome(attempt: Attempt): string {
  if (attempt.ok) return `ok@${attempt.timestamp}`;
  if (attempt.revert === undefined) return `undecoded: ${String(attempt.error).slice(0, 300)}`;
  return `${attempt.revert.name}(${attempt.revert.args.map(String).join(',')})`;
}
