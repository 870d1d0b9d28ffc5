import { nulAsText } from '../db/nul.js';

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
