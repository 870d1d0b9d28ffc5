/**
 * PostgreSQL text and jsonb cannot hold U+0000 (SQLSTATE 22021 / 22P05), and a string from a chain (a
 * TransferOut's lpId, a complaint's strings) or from a client may carry it. What the stores that keep such
 * strings share.
 */

/**
 * `text` with U+0000 written as the six characters `\u0000`: storable, but not reversible where the text
 * already had those characters (for keys, display and operator notes, never for what is judged again).
 */
export function nulAsText(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\\u0000') : text;
}

/** A UTF-16 surrogate without its pair (code units, so no `u` flag). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * `text` with each lone UTF-16 surrogate replaced by U+FFFD: JSON text may escape one (`"\ud800"`), which
 * jsonb refuses (and UTF-8 text cannot encode). Lossy: for what is kept for display and counting.
 */
export function wellFormed(text: string): string {
  return text.isWellFormed() ? text : text.replace(LONE_SURROGATE, '\uFFFD');
}

/** `value` (plain JSON data) with `f` applied to every string and every member name, at any depth. */
export function mapStrings<T>(value: T, f: (text: string) => string): T {
  if (typeof value === 'string') return f(value) as T;
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, f)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) out[f(key)] = mapStrings(v, f);
    return out as T;
  }
  return value;
}

/** Whether jsonb can hold `text` as it is: no U+0000, no lone UTF-16 surrogate. */
export function jsonbCanHold(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed();
}

/**
 * `value` (plain JSON data) as jsonb can hold it, in every string and member name: U+0000 as the six characters
 * `\u0000` (nulAsText), a lone surrogate as U+FFFD (wellFormed).
 */
export function jsonbStorable<T>(value: T): T {
  return mapStrings(value, (text) => nulAsText(wellFormed(text)));
}
