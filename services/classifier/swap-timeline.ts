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
  const bidId = bidIdOf(agreement);
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

  let outId = '0x' + '00'.repeat(32);
  if (spec.out.kind !== 'none') {
    const receiver = spec.out.kind === 'wrong_receiver' ? USER.address : LP.address;
    const amount = spec.out.kind === 'short_amount' ? (AMOUNT_OUT * 80n) / 100n : AMOUNT_OUT;
    outId = transferId({
      sender: USER.address,
      receiver,
      hashlock,
      token: NATIVE,
      tokenAmount: amount,
      ethAmount: 0n,
      isOut: true,
      chainId: SRC.evm,
      ...timesNumeric,
    });
    streams[SRC.chainId]!.push({
      kind: 'TransferOut',
      ...position(SRC.chainId, spec.out.at, USER.address),
      transferId: outId,
      sender: USER.address,
      receiver,
      token: NATIVE,
      amount: amount.toString(),
      hashlock,
      ...times,
      dstChainId: DST.chainId,
      dstAddress: BigInt(USER.address).toString(),
      bidId,
      tokenDst: '0',
      amountDst: AMOUNT_IN.toString(),
      nativeAmountDst: '0',
      requestor: agreement.requestor,
      lpId: LP_ID,
      userSign: agreement.userSign,
      lpSign: agreement.lpSign,
    });
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
  const dst: ChainEvent[] = [];
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
      complaint: complaintOfAgreement(agreement),
    });
  }
  streams[DST.chainId] = dst.sort((a, b) => a.blockTimestamp - b.blockTimestamp);
  streams[SRC.chainId]!.sort((a, b) => a.blockTimestamp - b.blockTimestamp);
  return { bidId, agreement, streams };
}
