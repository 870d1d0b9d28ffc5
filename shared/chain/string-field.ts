/**
 * zod field for EIP-712 `string` members: a JS string that is well-formed UTF-16.
 *
 * A lone surrogate has no UTF-8 encoding: ethers throws on it, Buffer would hash U+FFFD instead.
 * Rejecting it keeps the fast path and ethers in agreement. Numbers are not coerced: ethers 5
 * hashed a JSON number in a string field like "" (a defect documented in the vectors).
 */
import { z } from 'zod';

const LONE_SURROGATE = /\p{Surrogate}/u;

export function eip712StringField() {
  return z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .refine((text) => !LONE_SURROGATE.test(text), {
      message: 'contains a lone UTF-16 surrogate (not valid UTF-8)',
    });
}
