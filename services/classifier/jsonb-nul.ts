/**
 * PostgreSQL text and jsonb cannot hold U+0000, and any string of an on-chain event can carry it (a
 * TransferOut's requestor, lpId, userSign, lpSign; a complaint's strings and member names). The classifier
 * judges from the strings it stored (hashes, signature recoveries), so it stores them losslessly: a document
 * whose JSON text has no `\u0000` escape (every normal row) is stored as it is; one that has is stored
 * escaped and marked, and decoded when it is read back.
 *
 * The escape, in every string and every member name: U+F000 → U+F000 U+F000, U+0000 → U+F000 U+F001. It is
 * reversible: in an escaped string every U+F000 starts a pair (U+F000 U+F000 or U+F000 U+F001), so reading
 * the pairs from the left gives back the original. The mark is a top-level member named U+F000 alone, a name
 * no escaped member can have (its U+F000s come in pairs), so only marked documents are decoded. Members the
 * SQL reads (`kind`, `bidId`, `transferId`) are hex or fixed words, the same escaped or not.
 */

import { mapStrings } from '../../shared/db/nul.js';

/** The name of the member that marks an escaped document. */
export const NUL_ESCAPED = '\uF000';

const ESC = '\uF000';
const NUL = '\u0000';

function escapeString(s: string): string {
  if (!s.includes(NUL) && !s.includes(ESC)) return s;
  let out = '';
  for (const c of s) out += c === ESC ? ESC + ESC : c === NUL ? ESC + '\uF001' : c;
  return out;
}

function unescapeString(s: string): string {
  if (!s.includes(ESC)) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== ESC) {
      out += c;
      continue;
    }
    const next = s[++i];
    if (next === ESC) out += ESC;
    else if (next === '\uF001') out += NUL;
    else
      throw new Error(`not an escaped string: U+F000 followed by ${next === undefined ? 'nothing' : next}`);
  }
  return out;
}

/** The document escaped and marked (see above); `value` is a plain JSON object. */
export function escapeNul(value: object): Record<string, unknown> {
  return { [NUL_ESCAPED]: 1, ...mapStrings(value as Record<string, unknown>, escapeString) };
}

/** The document as it was written: a marked one unescaped, any other as it is. */
export function fromJsonb<T>(stored: T): T {
  if (stored === null || typeof stored !== 'object' || !(NUL_ESCAPED in stored)) return stored;
  const { [NUL_ESCAPED]: _mark, ...rest } = stored as Record<string, unknown>;
  return unescapeNul(rest) as T;
}

/** A part of a marked document, unescaped (e.g. a member SQL took out of it). */
export function unescapeNul<T>(part: T): T {
  return mapStrings(part, unescapeString);
}

/**
 * The JSON text to store in a jsonb column. The common case costs one `includes` on the text already built
 * (JSON.stringify writes U+0000 as the six characters `\u0000`; a string with a backslash before `u0000` is
 * escaped too, needlessly but losslessly) and a look for the mark's name among the top-level members (a
 * document that had one would be escaped too, so reading it back never mistakes it for a marked one).
 */
export function jsonbText(value: object): string {
  const text = JSON.stringify(value);
  return needsEscape(value, text) ? JSON.stringify(escapeNul(value)) : text;
}

/** U+0000 in the text, or a top-level member that would read as the mark (none of the classifier's have it). */
const needsEscape = (value: object, text: string) => text.includes('\\u0000') || NUL_ESCAPED in value;

/** A list as one JSON array of documents (each escaped only when it needs it). */
export function jsonbArrayText(values: readonly object[]): string {
  const text = JSON.stringify(values);
  return text.includes('\\u0000') || values.some((v) => NUL_ESCAPED in v)
    ? `[${values.map(jsonbText).join(',')}]`
    : text;
}
