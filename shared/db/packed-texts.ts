import { CodedError } from '../errors/coded-error.js';

/**
 * Many strings as one bytea parameter: their UTF-8 bytes back to back, with each one's 1-based start and byte
 * length, taken apart in SQL by `unpackedText`. Nothing is escaped on either side, where a `text[]` literal
 * is escaped element by element with regex passes in pg and a JSON array is escaped by JSON.stringify, then
 * parsed and unescaped again by PostgreSQL (bench: bus, publish).
 */
export interface PackedTexts {
  bytes: Buffer;
  starts: number[];
  lengths: number[];
}

/**
 * Packs `texts`. A string with a lone surrogate has no UTF-8 form (Buffer.from would put U+FFFD in its place):
 * it is refused with code TEXT_NOT_UNICODE, naming `what` and its index, so nothing is stored altered.
 */
export function packTexts(texts: readonly string[], what: string): PackedTexts {
  const starts = new Array<number>(texts.length);
  const lengths = new Array<number>(texts.length);
  let at = 1;
  for (let i = 0; i < texts.length; i++) {
    const text = texts[i]!;
    if (!(text as WellFormedCheck).isWellFormed()) {
      throw new CodedError(
        'TEXT_NOT_UNICODE',
        `${what} ${i} holds a lone surrogate: it has no UTF-8 form and cannot be stored as text`,
      );
    }
    const length = Buffer.byteLength(text, 'utf8');
    starts[i] = at;
    lengths[i] = length;
    at += length;
  }
  return { bytes: Buffer.from(texts.join(''), 'utf8'), starts, lengths };
}

/**
 * The SQL text at `start` for `length` bytes of the packed `bytes` (each an SQL expression, e.g. a column of
 * `unnest(starts)`). substring on bytea counts bytes, so each costs its own length; convert_from checks UTF-8.
 */
export function unpackedText(bytes: string, start: string, length: string): string {
  return `convert_from(substring(${bytes} FROM ${start} FOR ${length}), 'UTF8')`;
}

/** String.prototype.isWellFormed (ES2024, in Node 20) is not in the ES2023 lib this project compiles with. */
type WellFormedCheck = string & { isWellFormed(): boolean };
