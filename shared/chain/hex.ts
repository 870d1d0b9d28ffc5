/** Strict 0x-hex <-> bytes helpers (Buffer's own hex decoder silently stops at the first bad digit). */

const HEX_BODY = /^[0-9a-fA-F]*$/;

/** Bytes of a 0x-prefixed, even-length hex string (either case), or undefined if it is not one. */
export function hexToBytesOrUndefined(value: string): Uint8Array | undefined {
  if (!value.startsWith('0x') || value.length % 2 !== 0) return undefined;
  const body = value.slice(2);
  if (!HEX_BODY.test(body)) return undefined;
  return Buffer.from(body, 'hex');
}

/** Lowercase 0x-prefixed hex of the bytes. */
export function bytesToHex(bytes: Uint8Array): string {
  return '0x' + Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}
