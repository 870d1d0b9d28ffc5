import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCodedError } from '../errors/coded-error.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { packTexts, unpackedText } from './packed-texts.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

/** The texts back from PostgreSQL, unpacked in SQL in their order. */
async function roundTrip(texts: string[]): Promise<string[]> {
  const packed = packTexts(texts, 'text');
  const { rows } = await db.pool.query<{ t: string }>(
    `SELECT ${unpackedText('$1::bytea', 'p.s', 'p.l')} AS t
       FROM unnest($2::int[], $3::int[]) WITH ORDINALITY AS p(s, l, n) ORDER BY n`,
    [packed.bytes, packed.starts, packed.lengths],
  );
  return rows.map((r) => r.t);
}

describe('packTexts', () => {
  it('gives back every text as it was, whatever its characters and width in UTF-8', async () => {
    // Offsets count bytes: two-, three- and four-byte characters before a text would shift every later one
    // if characters were counted instead.
    const texts = [
      'é ü ß',
      '',
      '漢字 🚀 \u{1F980}',
      '"quoted" \\backslash\\ {braces}, commas',
      'NULL',
      '\\u0041 is not A',
      'line one\nline two\ttab\r',
      JSON.stringify({ nested: '{"a":[1,"2"]}', astral: '🦀' }),
      'x'.repeat(70_000),
      'last',
    ];
    expect(await roundTrip(texts)).toEqual(texts);
    expect(await roundTrip([])).toEqual([]);
  });

  it('refuses a text with a lone surrogate instead of storing U+FFFD in its place', () => {
    for (const lone of ['a\uD800b', 'a\uDC00', '\uD83D']) {
      let error: unknown;
      try {
        packTexts(['fine', lone], 'message value');
      } catch (err) {
        error = err;
      }
      expect(isCodedError(error, 'TEXT_NOT_UNICODE')).toBe(true);
      expect((error as Error).message).toContain('message value 1');
    }
    // A pair is one character, not a lone surrogate.
    expect(packTexts(['\uD83D\uDE80'], 'text').lengths).toEqual([4]);
  });
});
