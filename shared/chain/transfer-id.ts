/**
 * transferId of the Otmoic swap contract (V2.2):
 * keccak256(abi.encodePacked(sender, receiver, hashlock, agreementReachedTime, expectedSingleStepTime,
 * tolerantSingleStepTime, earliestRefundTime, token, token_amount, eth_amount, is_out, block.chainid))
 * with the four times as uint64, amounts and chain id as uint256. Not on a hot path: ethers packs it.
 */
import { solidityPackedKeccak256 } from 'ethers';
import { parseChainId, type ChainIdInput } from './chain-id.js';
import { ChainInputError } from './errors.js';
import { parseEvmAddress } from './evm-address.js';
import { hexToBytesOrUndefined } from './hex.js';
import { parseUnsignedInteger } from './unsigned-integer.js';

type UintInput = bigint | number | string;

export interface TransferIdInput {
  sender: string;
  receiver: string;
  hashlock: string;
  agreementReachedTime: UintInput;
  expectedSingleStepTime: UintInput;
  tolerantSingleStepTime: UintInput;
  earliestRefundTime: UintInput;
  token: string;
  tokenAmount: UintInput;
  ethAmount: UintInput;
  isOut: boolean;
  chainId: ChainIdInput;
}

const PACKED_TYPES = [
  'address',
  'address',
  'bytes32',
  'uint64',
  'uint64',
  'uint64',
  'uint64',
  'address',
  'uint256',
  'uint256',
  'bool',
  'uint256',
];

/** Lowercase 0x-hex bytes32. */
export function transferId(input: TransferIdInput): string {
  if (hexToBytesOrUndefined(input.hashlock)?.length !== 32) {
    throw new ChainInputError('INVALID_HASHLOCK', 'hashlock must be 32 bytes of 0x-prefixed hex');
  }
  return solidityPackedKeccak256(PACKED_TYPES, [
    parseEvmAddress(input.sender, 'sender'),
    parseEvmAddress(input.receiver, 'receiver'),
    input.hashlock,
    parseUnsignedInteger(input.agreementReachedTime, 64, 'agreementReachedTime'),
    parseUnsignedInteger(input.expectedSingleStepTime, 64, 'expectedSingleStepTime'),
    parseUnsignedInteger(input.tolerantSingleStepTime, 64, 'tolerantSingleStepTime'),
    parseUnsignedInteger(input.earliestRefundTime, 64, 'earliestRefundTime'),
    parseEvmAddress(input.token, 'token'),
    parseUnsignedInteger(input.tokenAmount, 256, 'tokenAmount'),
    parseUnsignedInteger(input.ethAmount, 256, 'ethAmount'),
    input.isOut,
    parseChainId(input.chainId),
  ]);
}
