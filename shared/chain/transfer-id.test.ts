import { describe, expect, it } from 'vitest';
import { relayVectors, type TransferIdCase } from '../../test/fixtures/otmoic-relay-vectors.js';
import { ChainInputError } from './errors.js';
import { transferId, type TransferIdInput } from './transfer-id.js';

const vectors = relayVectors.transfer_id[0];

function inputOf(vector: TransferIdCase): TransferIdInput {
  return {
    sender: vector.sender,
    receiver: vector.receiver,
    hashlock: vector.hashlock,
    agreementReachedTime: vector.agreement_reached_time,
    expectedSingleStepTime: vector.expected_single_step_time,
    tolerantSingleStepTime: vector.tolerant_single_step_time,
    earliestRefundTime: vector.earliest_refund_time,
    token: vector.token,
    tokenAmount: vector.token_amount,
    ethAmount: vector.eth_amount,
    isOut: vector.is_out,
    chainId: vector.chainid,
  };
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return error instanceof ChainInputError ? error.code : String(error);
  }
  return undefined;
}

describe('transferId', () => {
  it.each([
    ['out ERC20 on chain 97', vectors.out_erc20_chain97],
    ['in ERC20 on chain 97', vectors.in_erc20_chain97],
  ])('matches the vector: %s', (_label, vector) => {
    expect(transferId(inputOf(vector))).toBe(vector.transfer_id);
  });

  it('includes is_out (the pre-V2.2 id without it is different)', () => {
    const out = inputOf(vectors.out_erc20_chain97);
    expect(transferId(out)).not.toBe(vectors.pre_is_out_variant_v2_2_0_out_erc20_chain97);
    expect(transferId({ ...out, isOut: false })).not.toBe(transferId(out));
  });

  it('takes numbers as bigint, JSON integers or decimal strings alike', () => {
    const out = inputOf(vectors.out_erc20_chain97);
    const asStrings = { ...out, agreementReachedTime: '1700000000', chainId: '97', tokenAmount: 10n ** 18n };
    expect(transferId(asStrings)).toBe(vectors.out_erc20_chain97.transfer_id);
  });

  it('rejects bad input with typed errors', () => {
    const out = inputOf(vectors.out_erc20_chain97);
    expect(codeOf(() => transferId({ ...out, sender: '0x1234' }))).toBe('INVALID_ADDRESS');
    expect(codeOf(() => transferId({ ...out, hashlock: '0x1234' }))).toBe('INVALID_HASHLOCK');
    expect(codeOf(() => transferId({ ...out, expectedSingleStepTime: (1n << 64n).toString() }))).toBe(
      'INVALID_NUMBER',
    );
    expect(codeOf(() => transferId({ ...out, tokenAmount: 1.5 }))).toBe('INVALID_NUMBER');
    expect(codeOf(() => transferId({ ...out, chainId: 0 }))).toBe('INVALID_CHAIN_ID');
  });
});
