import fc from 'fast-check';
import { getAddress, ZeroAddress } from 'ethers';
import { describe, expect, it } from 'vitest';
import { relayVectors } from '../../test/fixtures/otmoic-relay-vectors.js';
import { addressToUint256, toEvmAddress, uint256ToAddress } from './conversions.js';
import { ChainInputError } from './errors.js';

function errorCodeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return error instanceof ChainInputError ? error.code : `not a ChainInputError: ${String(error)}`;
  }
  return undefined;
}

const ADDRESS_WITH_ZERO_FIRST_BYTE = '0x00000000219ab540356cBB839Cbe05303d7705Fa';

describe('conversions vectors', () => {
  it.each(
    relayVectors.conversions.map((vector) => [vector.input, vector.ethers5_BigNumber_toHexString] as const),
  )(
    '%s -> the same number as the original, always as a 20-byte checksummed address',
    (input, originalOutput) => {
      const address = toEvmAddress(input);
      expect(address).toMatch(/^0x[0-9a-fA-F]{40}$/);
      expect(address).toBe(getAddress(address));
      expect(BigInt(address)).toBe(BigInt(originalOutput));
    },
  );

  it('keeps the leading 0x00 bytes that the original dropped', () => {
    const vector = relayVectors.conversions.find((v) => v.input === ADDRESS_WITH_ZERO_FIRST_BYTE);
    expect(vector?.ethers5_BigNumber_toHexString).toBe('0x219ab540356cBB839Cbe05303d7705Fa'); // the defect: 16 bytes
    expect(toEvmAddress(ADDRESS_WITH_ZERO_FIRST_BYTE)).toBe(ADDRESS_WITH_ZERO_FIRST_BYTE);
    expect(toEvmAddress('0x219ab540356cBB839Cbe05303d7705Fa')).toBe(ADDRESS_WITH_ZERO_FIRST_BYTE);
    expect(uint256ToAddress(BigInt(ADDRESS_WITH_ZERO_FIRST_BYTE).toString())).toBe(
      ADDRESS_WITH_ZERO_FIRST_BYTE,
    );
  });

  it('maps the native-coin forms "0", "0x0", "0x00" to the zero address (the original gave "0x00")', () => {
    for (const input of ['0', '0x0', '0x00', ZeroAddress]) expect(toEvmAddress(input)).toBe(ZeroAddress);
  });

  it('turns the uint256 fields of confirm_in commands into the addresses of the expected calldata', () => {
    const confirmIns = relayVectors.calldata.filter((c) => c.name.startsWith('confirm_in') && c.decoded_args);
    expect(confirmIns.length).toBeGreaterThanOrEqual(3);
    for (const command of confirmIns) {
      const body = command.request['command_transfer_in_confirm'] as Record<string, string>;
      expect(toEvmAddress(body['user_receiver_address']!)).toBe(command.decoded_args!['_receiver']);
      expect(toEvmAddress(body['token']!)).toBe(command.decoded_args!['_token']);
    }
  });

  it('gives the receiver that the left-padded calldata of the 0x00-address vector carries', () => {
    const command = relayVectors.calldata.find((c) => c.v6_with_left_padding_would_give !== undefined)!;
    const body = command.request['command_transfer_in_confirm'] as Record<string, string>;
    const calldata = command.v6_with_left_padding_would_give!;
    const receiverWord = calldata.slice(2 + 8 + 64, 2 + 8 + 128); // after the selector and the sender word
    expect(receiverWord).toBe(
      toEvmAddress(body['user_receiver_address']!).slice(2).toLowerCase().padStart(64, '0'),
    );
  });
});

describe('uint256ToAddress / addressToUint256', () => {
  it('round-trips every address, including those with leading zero bytes', () => {
    const addresses = fc.oneof(
      fc.uint8Array({ minLength: 20, maxLength: 20 }),
      fc
        .tuple(fc.integer({ min: 1, max: 19 }), fc.uint8Array({ minLength: 20, maxLength: 20 }))
        .map(([zeros, bytes]) => Uint8Array.from(bytes, (byte, index) => (index < zeros ? 0 : byte))),
    );
    fc.assert(
      fc.property(addresses, (bytes) => {
        const address = getAddress('0x' + Buffer.from(bytes).toString('hex'));
        const number = addressToUint256(address);
        expect(number).toBe(BigInt(address));
        expect(uint256ToAddress(number.toString(10))).toBe(address);
        expect(uint256ToAddress(number)).toBe(address);
        expect(toEvmAddress(number.toString(10))).toBe(address);
      }),
      { numRuns: 500 },
    );
  });

  it('rejects values that do not fit 20 bytes, and non-decimal text', () => {
    expect(uint256ToAddress(((1n << 160n) - 1n).toString())).toBe(
      '0xFFfFfFffFFfffFFfFFfFFFFFffFFFffffFfFFFfF',
    );
    expect(errorCodeOf(() => uint256ToAddress((1n << 160n).toString()))).toBe('INVALID_ADDRESS');
    expect(errorCodeOf(() => uint256ToAddress(-1n))).toBe('INVALID_ADDRESS');
    for (const bad of ['', '-1', '1.5', '0x10', ' 1', '1e3'])
      expect(errorCodeOf(() => uint256ToAddress(bad))).toBe('INVALID_ADDRESS');
  });

  it('rejects malformed addresses and bad checksums', () => {
    for (const bad of [
      '0x5FbDB2315678afecb367f032d93F642f64180aA3',
      '0x1234',
      'hello',
      '0x' + '1'.repeat(41),
    ]) {
      expect(errorCodeOf(() => addressToUint256(bad))).toBe('INVALID_ADDRESS');
    }
    for (const bad of [
      '0x' + '1'.repeat(41),
      '0x',
      '',
      'abc',
      '0x5FbDB2315678afecb367f032d93F642f64180aA3',
      '1'.repeat(80),
    ]) {
      expect(errorCodeOf(() => toEvmAddress(bad))).toBe('INVALID_ADDRESS');
    }
  });
});
