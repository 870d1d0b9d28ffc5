/**
 * Synthetic swaps for tests and benchmarks of the classifier: the events of one swap on two chains (and a
 * complaint on the reputation stream), built from a compact description, with genuine signatures of the
 * Hardhat test keys. Times are small unix seconds; windows follow spec/otmoic.md §3.
 */
import { Wallet, keccak256, toUtf8Bytes } from 'ethers';
import { complaintOfAgreement, type SignedAgreement } from '../../shared/otmoic/agreement.js';
import { bidIdOf, signAgreement, userDid } from '../../shared/devnet/agreements.js';
import { hardhatDefaultAccounts } from '../../shared/devnet/hardhat-node.js';
import { transferId } from '../../shared/chain/transfer-id.js';
import type { ChainEvent } from '../../topics/index.js';

export const SRC = { chainId: '9006', evm: 97 };
export const DST = { chainId: '614', evm: 11155420 };
/** Complaints come from the reputation contract on the destination chain. */
export const REPUTATION_CHAIN = DST.chainId;
export const CONTRACT = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512';
export const REPUTATION = '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0';

const keys = hardhatDefaultAccounts().map((a) => a.privateKey);
export const account = (index: number) => new Wallet(keys[index]!);
export const USER = account(1);
export const LP = account(2);
export const RELAY = account(3);
export const STRANGER = account(4);
export const LP_ID = 'lp-test';
export const USER_DID = userDid(USER.address);
export const STRANGER_DID = 'stranger.devnet';

/** DID names of the test accounts (what the DID support service would answer). */
export const DID_NAMES: Readonly<Record<string, readonly string[]>> = {
  [USER.address.toLowerCase()]: [USER_DID],
  [LP.address.toLowerCase()]: [LP_ID],
  [STRANGER.address.toLowerCase()]: [STRANGER_DID],
};

export interface TimelineSpec {
  /** Makes the agreement (and so its bid) unique among many swaps with the same times. */
  id?: number;
  T: number;
  E: number;
  Tol: number;
  /** Who signed lpSign: the LP, a stranger (no LP consent), or garbage bytes. */
  lpSign: 'lp' | 'stranger' | 'garbage';
  userSign: 'user' | 'stranger';
  /** The user's lock: absent, as agreed, 80 % of the amount, or paid to the user's own address. */
  out: { kind: 'none' } | { kind: 'ok' | 'short_amount' | 'wrong_receiver'; at: number };
  /** The LP's answer on the destination chain. */
  in: { kind: 'none' } | { kind: 'ok' | 'wrong_amount' | 'wrong_hashlock'; at: number };
  /** A TransferIn naming the swap by someone who is not the LP. */
  griefIn?: { at: number };
  /**
   * A TransferOut with the swap's bid and terms but sent by a stranger's throwaway address for 1 wei, on the
   * source or the destination chain: its fields do not hash to the bid, so it is nobody's swap.
   */
  puppetOut?: { at: number; chain: 'src' | 'dst' };
  /** The user locks the same agreement again (another hashlock), later in chain order: not the swap. */
  copyOut?: { at: number };
  confirmOut?: { by: 'user' | 'relay'; at: number };
  confirmIn?: { by: 'lp' | 'user' | 'relay'; at: number };
  complaint?: { by: 'lp' | 'user' | 'stranger'; at: number };
}

export interface Timeline {
  bidId: string;
  agreement: SignedAgreement;
  /** Per chain stream, the events in block order. */
  streams: Record<string, ChainEvent[]>;
}

const NATIVE = '0x0000000000000000000000000000000000000000';
const BASE_AMOUNT_OUT = 1_000_000n;
const AMOUNT_IN = 990_000n;

let txCounter = 0;
const txHash = () => '0x' + (++txCounter).toString(16).padStart(64, '0');

export function buildTimeline(spec: TimelineSpec): Timeline {
  const { T, E, Tol } = spec;
  const R = T + 3 * E + 3 * Tol + 60;
  const AMOUNT_OUT = BASE_AMOUNT_OUT + BigInt(spec.id ?? 0);
  const agreementTerms = {
    srcChainId: BigInt(SRC.chainId),
    srcAddress: USER.address,
    srcToken: NATIVE,
    srcAmount: AMOUNT_OUT.toString(),
    dstChainId: BigInt(DST.chainId),
    dstAddress: USER.address,
    dstToken: NATIVE,
    dstAmount: AMOUNT_IN.toString(),
    dstNativeAmount: '0',
    requestor: USER.address,
    lpId: LP_ID,
    agreementReachedTime: BigInt(T),
    expectedSingleStepTime: BigInt(E),
    tolerantSingleStepTime: BigInt(Tol),
    earliestRefundTime: BigInt(R),
  };
  const signed = signAgreement(
    agreementTerms,
    {
      userKey: (spec.userSign === 'user' ? USER : STRANGER).privateKey,
      lpKey: (spec.lpSign === 'lp' ? LP : STRANGER).privateKey,
    },
    { srcEvmChainId: SRC.evm, dstEvmChainId: DST.evm },
  );
  const agreement = spec.lpSign === 'garbage' ? { ...signed, lpSign: '0xdeadbeef' } : signed;
  const amountLocked = spec.out.kind === 'short_amount' ? (AMOUNT_OUT * 80n) / 100n : AMOUNT_OUT;
  // What the lock claims: a short lock carries the genuine signatures over its own (short) terms, and the
  // bid of those terms, as every TransferOut that is a swap does (one whose fields do not hash to its bid is
  // nobody's swap). A complaint about it quotes the same terms.
  const claimed = { ...agreement, srcAmount: amountLocked.toString() };
  const bidId = bidIdOf(claimed);
  // One hashlock per swap, as the hash of a fresh secret: a transfer id is unique on a real chain (the
  // contract refuses a second one), and equal ids would join one swap's TransferIn to another's ConfirmIn.
  const hashlock = keccak256(toUtf8Bytes(`hashlock ${spec.id ?? 0}`));
  const wrongHashlock = keccak256(toUtf8Bytes(`wrong hashlock ${spec.id ?? 0}`));
  const streams: Record<string, ChainEvent[]> = { [SRC.chainId]: [], [DST.chainId]: [], reputation: [] };
  let block = 1;
  const position = (chainId: string, at: number, from: string) => ({
    chainId,
    contract: CONTRACT,
    blockNumber: block++,
    blockTimestamp: at,
    txHash: txHash(),
    logIndex: 0,
    txFrom: from,
  });
  const times = {
    expectedSingleStepTime: String(E),
    tolerantSingleStepTime: String(Tol),
    earliestRefundTime: String(R),
    agreementReachedTime: String(T),
  };
  const timesNumeric = {
    agreementReachedTime: T,
    expectedSingleStepTime: E,
    tolerantSingleStepTime: Tol,
    earliestRefundTime: R,
  };

  const receiver = spec.out.kind === 'wrong_receiver' ? USER.address : LP.address;
  const lock = (
    chainId: string,
    evm: number,
    at: number,
    sender: string,
    amount: bigint,
    lockHash: string,
  ) => {
    const id = transferId({
      sender,
      receiver,
      hashlock: lockHash,
      token: NATIVE,
      tokenAmount: amount,
      ethAmount: 0n,
      isOut: true,
      chainId: evm,
      ...timesNumeric,
    });
    return {
      kind: 'TransferOut' as const,
      ...position(chainId, at, sender),
      transferId: id,
      sender,
      receiver,
      token: NATIVE,
      amount: amount.toString(),
      hashlock: lockHash,
      ...times,
      dstChainId: DST.chainId,
      dstAddress: BigInt(USER.address).toString(),
      bidId,
      tokenDst: '0',
      amountDst: AMOUNT_IN.toString(),
      nativeAmountDst: '0',
      requestor: claimed.requestor,
      lpId: LP_ID,
      userSign: claimed.userSign,
      lpSign: claimed.lpSign,
    };
  };
  let outId = '0x' + '00'.repeat(32);
  if (spec.out.kind !== 'none') {
    const out = lock(SRC.chainId, SRC.evm, spec.out.at, USER.address, amountLocked, hashlock);
    outId = out.transferId;
    streams[SRC.chainId]!.push(out);
    if (spec.copyOut) {
      const copyLock = keccak256(toUtf8Bytes(`copy hashlock ${spec.id ?? 0}`));
      streams[SRC.chainId]!.push(
        lock(SRC.chainId, SRC.evm, spec.copyOut.at, USER.address, amountLocked, copyLock),
      );
    }
  }
  const dst: ChainEvent[] = [];
  if (spec.puppetOut) {
    const puppetLock = keccak256(toUtf8Bytes(`puppet hashlock ${spec.id ?? 0}`));
    const [chainId, evm] = spec.puppetOut.chain === 'src' ? [SRC.chainId, SRC.evm] : [DST.chainId, DST.evm];
    const puppet = lock(chainId, evm, spec.puppetOut.at, STRANGER.address, 1n, puppetLock);
    (spec.puppetOut.chain === 'src' ? streams[SRC.chainId]! : dst).push(puppet);
  }
  const transferIn = (sender: string, at: number, kind: 'ok' | 'wrong_amount' | 'wrong_hashlock') => {
    const tokenAmount = kind === 'wrong_amount' ? (AMOUNT_IN * 9n) / 10n : AMOUNT_IN;
    const lock = kind === 'wrong_hashlock' ? wrongHashlock : hashlock;
    const id = transferId({
      sender,
      receiver: USER.address,
      hashlock: lock,
      token: NATIVE,
      tokenAmount,
      ethAmount: 0n,
      isOut: false,
      chainId: DST.evm,
      ...timesNumeric,
    });
    return {
      kind: 'TransferIn' as const,
      ...position(DST.chainId, at, sender),
      transferId: id,
      sender,
      receiver: USER.address,
      token: NATIVE,
      tokenAmount: tokenAmount.toString(),
      ethAmount: '0',
      hashlock: lock,
      ...times,
      srcChainId: SRC.chainId,
      srcTransferId: outId,
    };
  };
  let inId: string | undefined;
  if (spec.griefIn) dst.push(transferIn(STRANGER.address, spec.griefIn.at, 'ok'));
  if (spec.in.kind !== 'none') {
    const e = transferIn(LP.address, spec.in.at, spec.in.kind);
    inId = e.transferId;
    dst.push(e);
  }
  const preimage = '0x' + '01'.repeat(32);
  if (spec.confirmIn && inId) {
    const from = { lp: LP, user: USER, relay: RELAY }[spec.confirmIn.by].address;
    dst.push({
      kind: 'ConfirmIn',
      ...position(DST.chainId, spec.confirmIn.at, from),
      transferId: inId,
      preimage,
    });
  }
  if (spec.confirmOut && spec.out.kind !== 'none') {
    const from = (spec.confirmOut.by === 'user' ? USER : RELAY).address;
    streams[SRC.chainId]!.push({
      kind: 'ConfirmOut',
      ...position(SRC.chainId, spec.confirmOut.at, from),
      transferId: outId,
      preimage,
    });
  }
  if (spec.complaint) {
    const complainant = { lp: LP_ID, user: USER_DID, stranger: STRANGER_DID }[spec.complaint.by];
    streams.reputation!.push({
      kind: 'Complaint',
      ...position(REPUTATION_CHAIN, spec.complaint.at, RELAY.address),
      contract: REPUTATION,
      bidId,
      complainant,
      complaint: complaintOfAgreement(claimed),
    });
  }
  // In block order (same block time: in the order made, which numbered the blocks).
  const byBlock = (a: ChainEvent, b: ChainEvent) =>
    a.blockTimestamp - b.blockTimestamp || a.blockNumber - b.blockNumber;
  streams[DST.chainId] = dst.sort(byBlock);
  streams[SRC.chainId]!.sort(byBlock);
  return { bidId, agreement, streams };
}
