/** fast-check generators shared by the EIP-712 property tests (test support, not shipped code). */
import fc from 'fast-check';
import { Signature, SigningKey } from 'ethers';

export const SECP256K1_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

export const privateKeyArbitrary = fc
  .bigInt({ min: 1n, max: SECP256K1_ORDER - 1n })
  .map((key) => new SigningKey('0x' + key.toString(16).padStart(64, '0')));

export const chainIdArbitrary = fc.oneof(
  fc.constantFrom(1, 10, 56, 97, 137, 43114, 11155420),
  fc.bigInt({ min: 1n, max: (1n << 256n) - 1n }),
);

/** A uint as a client may send it: a JSON integer when it is safe, else (or by choice) a decimal string. */
export function jsonUintArbitrary(bits: 64 | 256): fc.Arbitrary<number | string> {
  const max = (1n << BigInt(bits)) - 1n;
  return fc
    .tuple(fc.oneof(fc.bigInt({ min: 0n, max: 10_000_000_000n }), fc.bigInt({ min: 0n, max })), fc.boolean())
    .map(([value, asString]) =>
      !asString && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString(10),
    );
}

/** Well-formed Unicode (any code point, surrogate pairs included), ASCII, and address-like text. */
export const eip712StringArbitrary = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 80 }),
  fc.uint8Array({ minLength: 20, maxLength: 20 }).map((bytes) => '0x' + Buffer.from(bytes).toString('hex')),
);

export type SignatureForm = 'rsv-27-28' | 'rsv-0-1' | 'eip-2098';
export const signatureFormArbitrary = fc.constantFrom<SignatureForm>('rsv-27-28', 'rsv-0-1', 'eip-2098');

export function serializeSignature(signature: Signature, form: SignatureForm): string {
  if (form === 'eip-2098') return signature.compactSerialized;
  if (form === 'rsv-27-28') return signature.serialized;
  return signature.r + signature.s.slice(2) + signature.yParity.toString(16).padStart(2, '0');
}

/** Structurally valid but random signatures: off-curve r, high s, zero words... */
export const randomSignatureArbitrary = fc.oneof(
  fc
    .tuple(fc.uint8Array({ minLength: 64, maxLength: 64 }), fc.constantFrom(0, 1, 27, 28))
    .map(([rs, v]) => '0x' + Buffer.from(rs).toString('hex') + v.toString(16).padStart(2, '0')),
  fc.uint8Array({ minLength: 64, maxLength: 64 }).map((rs) => '0x' + Buffer.from(rs).toString('hex')),
);
