import fc from 'fast-check';
import { keccak256, solidityPackedKeccak256, toUtf8Bytes } from 'ethers';
import { describe, expect, it } from 'vitest';
import { bidId, bidIdPreimage } from './bid-id.js';
import { parseComplaint } from './complaint-eip712.js';
import { eip712StringArbitrary, jsonUintArbitrary } from '../../test/fixtures/eip712-arbitraries.js';

const complaint = parseComplaint({
  srcChainId: 9006,
  srcAddress: '642829559307850963015472508762062935916233390536',
  srcToken: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
  dstChainId: 60,
  dstAddress: '344073830386746567427978432078835137280280269756',
  dstToken: '0x0000000000000000000000000000000000000000',
  srcAmount: '1000000000000000000',
  dstAmount: '990000000000000000',
  dstNativeAmount: '0',
  requestor: 'did:requestor',
  lpId: 'lp-test-01',
  expectedSingleStepTime: 60,
  tolerantSingleStepTime: 120,
  earliestRefundTime: 1700000541,
  agreementReachedTime: 1700000000,
  userSign: 'userSign',
  lpSign: 'lpSign',
});

describe('bidId', () => {
  it('concatenates the members in the contract order, numbers in base 10, without separators', () => {
    expect(bidIdPreimage(complaint)).toBe(
      '1700000000' + // agreementReachedTime
        '9006' + // srcChainId
        '642829559307850963015472508762062935916233390536' + // srcAddress (uint256, decimal)
        '0x5FbDB2315678afecb367f032d93F642f64180aa3' + // srcToken
        '60' + // dstChainId
        '344073830386746567427978432078835137280280269756' + // dstAddress
        '0x0000000000000000000000000000000000000000' + // dstToken
        '1000000000000000000' + // srcAmount
        '990000000000000000' + // dstAmount
        '0' + // dstNativeAmount
        'did:requestor' + // requestor
        'lp-test-01' + // lpId
        '60' + // expectedSingleStepTime
        '120' + // tolerantSingleStepTime
        '1700000541' + // earliestRefundTime
        'userSign' + // userSign
        'lpSign', // lpSign
    );
  });

  it('is keccak256 of the UTF-8 of that text, as lowercase bytes32 hex', () => {
    const id = bidId(complaint);
    expect(id).toBe(keccak256(toUtf8Bytes(bidIdPreimage(complaint))));
    expect(id).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it('equals keccak256(abi.encodePacked(parts as strings)) for random complaints, any Unicode and uint size', () => {
    const uint64 = jsonUintArbitrary(64);
    const uint256AsString = jsonUintArbitrary(256).map(String);
    fc.assert(
      fc.property(
        fc.tuple(
          uint64,
          uint64,
          uint256AsString,
          eip712StringArbitrary,
          uint256AsString,
          eip712StringArbitrary,
          eip712StringArbitrary,
        ),
        fc.tuple(
          uint64,
          uint64,
          uint64,
          eip712StringArbitrary,
          eip712StringArbitrary,
          eip712StringArbitrary,
          eip712StringArbitrary,
        ),
        (
          [time, srcChainId, srcAddress, srcToken, dstAddress, dstToken, requestor],
          [dstChainId, expected, tolerant, lpId, userSign, lpSign, amount],
        ) => {
          const raw = {
            agreementReachedTime: time,
            srcChainId,
            srcAddress,
            srcToken,
            dstChainId,
            dstAddress,
            dstToken,
            srcAmount: amount,
            dstAmount: amount + '1',
            dstNativeAmount: '',
            requestor,
            lpId,
            expectedSingleStepTime: expected,
            tolerantSingleStepTime: tolerant,
            earliestRefundTime: expected,
            userSign,
            lpSign,
          };
          const parts = [
            time,
            srcChainId,
            srcAddress,
            srcToken,
            dstChainId,
            dstAddress,
            dstToken,
            amount,
            amount + '1',
            '',
            requestor,
            lpId,
            expected,
            tolerant,
            expected,
            userSign,
            lpSign,
          ].map(String); // uint JSON numbers are safe integers, so String() is their base-10 text
          expect(bidId(parseComplaint(raw))).toBe(
            solidityPackedKeccak256(
              parts.map(() => 'string'),
              parts,
            ),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
