import { jsonbCanHold, jsonbStorable, nulAsText } from '../db/nul.js';

/** Stable key → partition (FNV-1a 32-bit): the same key always lands in the same partition. */
export function partitionFor(key: string, partitions: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % partitions;
}

/**
 * A message key as the buses store it in a text column (PostgreSQL text cannot hold U+0000, and a key is free
 * text, e.g. a violation's `party:subject` with an on-chain LP id): U+0000 becomes the six characters
 * `\u0000`. Keys only choose partitions and are never parsed, so a key that already had those characters
 * sharing the partition is harmless.
 */
export function storableKey(key: string): string {
  return nulAsText(key);
}

/**
 * A message's headers as the buses store them (jsonb on the postgres log and in the Kafka outbox), and as
 * Kafka's direct send writes them so both ways agree: U+0000 in a name or value becomes `\u0000`, as in keys,
 * and a lone UTF-16 surrogate (jsonb refuses it too: a cut through a surrogate pair, or a JSON `"\ud800"` a
 * message carried) becomes U+FFFD.
 * A dead letter's error header quotes whatever failed, strings from a chain included; a header jsonb cannot
 * hold failed the dead-lettering, so the message was retried to the attempts bound and dead-lettered with
 * its real error lost.
 */
export function storableHeaders(
  headers: Readonly<Record<string, string>> | undefined,
): Record<string, string> {
  if (headers === undefined) return {};
  for (const name in headers)
    if (!jsonbCanHold(name) || !jsonbCanHold(headers[name]!)) return jsonbStorable({ ...headers });
  return headers as Record<string, string>;
}
