// Otmoic against the golden vectors (test/fixtures/otmoic-relay.json, made with the original contract and
// ethers 5): transferId rule, event topic0s, behalf calldata, and a live replay on chain 97 whose
// transferId, event data and confirm calldata must be byte-identical to the vectors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contract, Interface, getAddress, toBeHex } from 'ethers';
import { compileContracts } from './compile.js';
import type { CompiledContracts } from './compile.js';
import { startDevnet } from '../shared/devnet/devnet.js';
import type { Devnet } from '../shared/devnet/devnet.js';
import { loadGoldenVectors } from './golden-vectors.js';
import type { BehalfCommand, TransferIdVector } from './golden-vectors.js';
import {
  callAt,
  computeTransferId,
  confirmArgs,
  hashlockOf,
  outcome,
  refundArgs,
  transferOutArgs,
} from './otmoic-test-kit.js';
import type { OutExtras, SwapSide } from './otmoic-test-kit.js';

const vectors = loadGoldenVectors();
let compiled: CompiledContracts;
let otmoic: Interface;

beforeAll(async () => {
  compiled = await compileContracts();
  otmoic = new Interface(compiled.Otmoic.abi);
});

function sideOf(v: TransferIdVector): SwapSide {
  return {
    sender: v.sender,
    receiver: v.receiver,
    token: v.token,
    tokenAmount: BigInt(v.token_amount),
    ethAmount: BigInt(v.eth_amount),
    hashlock: v.hashlock,
    agreementReachedTime: v.agreement_reached_time,
    expectedSingleStepTime: v.expected_single_step_time,
    tolerantSingleStepTime: v.tolerant_single_step_time,
    earliestRefundTime: v.earliest_refund_time,
  };
}

const transferIdVectors = vectors.transfer_id[0];
const outVector = transferIdVectors.out_erc20_chain97;
const inVector = transferIdVectors.in_erc20_chain97;

describe('transferId rule', () => {
  it('matches the golden out and in transfer ids', () => {
    for (const v of [outVector, inVector]) {
      expect(computeTransferId(sideOf(v), v.is_out, v.chainid)).toBe(v.transfer_id);
    }
  });

  it('is not the pre-is_out (V2.2.0) variant, and depends on chain id and side', () => {
    const out = sideOf(outVector);
    expect(computeTransferId(out, true, 97)).not.toBe(
      transferIdVectors.pre_is_out_variant_v2_2_0_out_erc20_chain97,
    );
    expect(computeTransferId(out, false, 97)).not.toBe(outVector.transfer_id);
    expect(computeTransferId(out, true, 56)).not.toBe(outVector.transfer_id);
  });
});

describe('event topic0', () => {
  it('every event of the ABI has the vectors topic0', () => {
    const topics = vectors.events[2].topics;
    expect(Object.keys(topics)).toHaveLength(6);
    for (const [name, topic0] of Object.entries(topics)) {
      expect(otmoic.getEvent(name)?.topicHash, name).toBe(topic0);
    }
    for (const event of [vectors.events[0], vectors.events[1]]) {
      expect(otmoic.getEvent(event.event)?.topicHash).toBe(event.topic0);
    }
  });

  it('no event parameter is indexed', () => {
    otmoic.forEachEvent((event) => expect(event.inputs.filter((input) => input.indexed)).toEqual([]));
  });
});

/** A behalf command's address field: hex, or a decimal uint256 (from TransferOut event), left-padded to 20 bytes. */
function toAddress(value: string): string {
  return getAddress(toBeHex(BigInt(value), 20));
}

function sideOfCommand(command: BehalfCommand): SwapSide {
  return {
    // The refund_in vector names a wallet instead of a sender; the vector says which address it stood for.
    sender: command.sender ?? '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    receiver: toAddress(command.user_receiver_address),
    token: toAddress(command.token),
    tokenAmount: BigInt(command.token_amount),
    ethAmount: BigInt(command.eth_amount),
    hashlock: command.hash_lock,
    agreementReachedTime: command.agreement_reached_time,
    expectedSingleStepTime: command.expected_single_step_time,
    tolerantSingleStepTime: command.tolerant_single_step_time,
    earliestRefundTime: command.earliest_refund_time,
  };
}

describe('behalf calldata built by ethers from our ABI', () => {
  const withCalldata = vectors.calldata.filter((v) => v.calldata !== undefined);

  it('covers confirmTransferOut, confirmTransferIn and both refunds', () => {
    expect(new Set(withCalldata.map((v) => v.function))).toEqual(
      new Set(['confirmTransferOut', 'confirmTransferIn', 'refundTransferOut', 'refundTransferIn']),
    );
  });

  for (const vector of withCalldata) {
    it(vector.name, () => {
      const { command_transfer_out_confirm, command_transfer_in_confirm, command_transfer_refund } =
        vector.request;
      const command: BehalfCommand | undefined =
        command_transfer_out_confirm ?? command_transfer_in_confirm ?? command_transfer_refund;
      if (command === undefined) throw new Error(`vector ${vector.name} has no command`);
      const side = sideOfCommand(command);
      const isConfirm = vector.function.startsWith('confirm');
      if (isConfirm && command.preimage === undefined)
        throw new Error(`vector ${vector.name} has no preimage`);
      const args = isConfirm ? confirmArgs(side, command.preimage!) : refundArgs(side);
      expect(otmoic.encodeFunctionData(vector.function, args)).toBe(vector.calldata);
    });
  }
});

describe('live replay of the vectors swap on chain 97', () => {
  let devnet: Devnet;
  const T = outVector.agreement_reached_time;

  beforeAll(async () => {
    // Genesis shortly before the vectors' agreement time, so transferOut is still inside T+E.
    devnet = await startDevnet({ chains: [{ chainId: 97, initialTimestamp: T - 300 }], compiled });
  });

  afterAll(async () => {
    await devnet?.stop();
  });

  it('transferOut and confirmTransferOut produce the golden transferId, event data and calldata', async () => {
    const chain = devnet.chain(97);
    // Deployed first from a fresh account 0, the token sits at the vectors' token address.
    expect(chain.contracts.token).toBe(outVector.token);
    expect(chain.accounts[2]!.address).toBe(outVector.sender);

    const preimage = `0x${'02'.repeat(32)}`;
    expect(hashlockOf(preimage)).toBe(outVector.hashlock);
    const side = sideOf(outVector);
    const extras: OutExtras = {
      dstChainId: 60,
      dstAddress: 344073830386746567427978432078835137280280269756n,
      bidId: `0x${'aa'.repeat(32)}`,
      tokenDst: 1324161310598743833836268493538283093091898295570n,
      amountDst: 990000000000000000n,
      nativeAmountDst: 0n,
      requestor: 'did:requestor',
      lpId: 'lp-test-01',
      userSign: 'userSign',
      lpSign: 'lpSign',
    };

    const user = new Contract(chain.contracts.otmoic, compiled.Otmoic.abi, chain.wallet(2));
    const token = new Contract(chain.contracts.token, compiled.TestToken.abi, chain.wallet(2));
    await (await token.getFunction('approve')(chain.contracts.otmoic, side.tokenAmount)).wait();
    expect(await chain.latestTimestamp()).toBeLessThan(T);

    const locked = await callAt(chain, T + 10, user, 'transferOut', transferOutArgs(side, extras));
    expect(outcome(locked)).toBe(`ok@${T + 10}`);
    const confirmed = await callAt(chain, T + 20, user, 'confirmTransferOut', confirmArgs(side, preimage));
    expect(outcome(confirmed)).toBe(`ok@${T + 20}`);
    if (!locked.ok || !confirmed.ok) throw new Error('unreachable');

    // events[0] is the LogTransferOutConfirmed vector, events[1] the LogNewTransferOut one.
    const [confirmOutVector, transferOutVector] = vectors.events;
    const lockLog = locked.receipt.logs.at(-1)!;
    expect(lockLog.topics).toEqual([transferOutVector.topic0]);
    expect(lockLog.data).toBe(transferOutVector.log_data);
    expect(lockLog.data.slice(0, 66)).toBe(outVector.transfer_id);

    const confirmLog = confirmed.receipt.logs.at(-1)!;
    expect(confirmLog.topics).toEqual([confirmOutVector.topic0]);
    expect(confirmLog.data).toBe(confirmOutVector.log_data);

    const confirmTx = await chain.provider.getTransaction(confirmed.receipt.hash);
    const confirmVector = vectors.calldata.find((v) => v.name === 'confirm_out ERC20');
    expect(confirmVector?.calldata).toBeDefined();
    expect(confirmTx?.data).toBe(confirmVector?.calldata);

    const reader = new Contract(chain.contracts.otmoic, compiled.Otmoic.abi, chain.provider);
    expect((await reader.getFunction('swapStatus')(outVector.transfer_id))[0]).toBe(2n);
  });
});
