/**
 * Address <-> uint256 conversions between event fields and contract arguments.
 *
 * LogNewTransferOut carries the destination address and token as uint256 (`dstAddress`,
 * `tokenDst`); the chain client's event_parse gives them as decimal strings, and confirm_in must
 * turn them back into 20-byte addresses. The original used ethers-5 `BigNumber.toHexString()`,
 * which drops leading zero bytes (0x00000000219a… became the invalid 0x219a…, "0" became "0x00").
 * Here the number is always left-padded to 20 bytes, so every address round-trips.
 */
import { ChainInputError } from './errors.js';
import { parseEvmAddress } from './evm-address.js';
import { getAddress } from 'ethers';

const ADDRESS_HEX_DIGITS = 40;
const DECIMAL_DIGITS = /^[0-9]{1,78}$/;
const HEX_NUMBER = /^0x[0-9a-fA-F]{1,40}$/;

/** Checksummed address of a uint256 (decimal string or bigint); values >= 2^160 are rejected. */
export function uint256ToAddress(value: string | bigint): string {
  let number: bigint;
  if (typeof value === 'bigint') number = value;
  else if (typeof value === 'string' && DECIMAL_DIGITS.test(value)) number = BigInt(value);
  else
    throw new ChainInputError(
      'INVALID_ADDRESS',
      `uint256 address must be a decimal integer string, got ${JSON.stringify(String(value).slice(0, 80))}`,
    );
  if (number < 0n || number >> 160n !== 0n) {
    throw new ChainInputError('INVALID_ADDRESS', 'uint256 address must be below 2^160 to fit in 20 bytes');
  }
  return getAddress('0x' + number.toString(16).padStart(ADDRESS_HEX_DIGITS, '0'));
}

/** The uint256 that the contract stores for an address (`uint256(uint160(addr))`). */
export function addressToUint256(address: string): bigint {
  return BigInt(parseEvmAddress(address));
}

/**
 * Checksummed address from any form a relay command carries: a decimal uint256 string
 * (event_parse of dstAddress / tokenDst, "0" for the native coin) or 0x-hex of up to 20 bytes
 * ("0x0", "0x00", a full address). Short hex is a number and is left-padded; a full 40-digit
 * mixed-case address must have a valid checksum.
 */
export function toEvmAddress(value: string): string {
  if (typeof value === 'string' && DECIMAL_DIGITS.test(value)) return uint256ToAddress(value);
  if (typeof value === 'string' && HEX_NUMBER.test(value)) {
    return parseEvmAddress('0x' + value.slice(2).padStart(ADDRESS_HEX_DIGITS, '0'));
  }
  throw new ChainInputError(
    'INVALID_ADDRESS',
    `address must be a decimal uint256 string or 0x-hex of at most 20 bytes, got ${JSON.stringify(String(value).slice(0, 80))}`,
  );
}
