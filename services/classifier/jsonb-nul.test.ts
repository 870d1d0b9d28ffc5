import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { NUL_ESCAPED, escapeNul, fromJsonb, jsonbArrayText, jsonbText, unescapeNul } from './jsonb-nul.js';

/** Documents whose strings and member names hold U+0000, the escape character U+F000, and both. */
const awkward = [
  { lpId: 'lp\u0000x' },
  { userSign: '\u0000', lpSign: '\u0000\u0000', requestor: 'a\u0000' },
  { s: '\uF000' },
  { s: '\uF000\uF001', t: '\uF001\uF000', u: '\uF000\u0000\uF000\uF000\u0000' },
  { [NUL_ESCAPED]: 'a document with the mark’s own name', '\uF000\uF000': 'x' },
  {
    complaint: { 'key\u0000': 'value\u0000', '\uF000': '\uF001' },
    list: ['\u0000', ['\uF000', 1, null, true]],
  },
  { emoji: '🦀\u0000漢字\uF000', backslash: '\\u0000 is six characters, not NUL' },
  { nothing: 'plain', n: 3, b: false, z: null, a: [] },
];

describe('the U+0000 escape of jsonb documents', () => {
  it('gives back every document exactly, U+F000 included', () => {
    for (const doc of awkward) {
      const escaped = escapeNul(doc);
      expect(escaped[NUL_ESCAPED]).toBe(1);
      // Nothing PostgreSQL refuses is left (escaped backslashes taken out first: `\\u0000` is no NUL).
      expect(JSON.stringify(escaped).replaceAll('\\\\', '')).not.toContain('\\u0000');
      expect(fromJsonb(escaped)).toEqual(doc);
      expect(fromJsonb(JSON.parse(jsonbText(doc)))).toEqual(doc);
    }
    expect(fromJsonb(JSON.parse(jsonbArrayText(awkward)).map(fromJsonb))).toEqual(awkward);
  });

  it('leaves a document without U+0000 as JSON.stringify writes it, unmarked', () => {
    const plain = { kind: 'TransferOut', lpId: 'lp-\uF000', n: [1, 'two'] };
    expect(jsonbText(plain)).toBe(JSON.stringify(plain));
    expect(jsonbArrayText([plain, plain])).toBe(JSON.stringify([plain, plain]));
    expect(fromJsonb(plain)).toBe(plain);
  });

  it('refuses to decode a string that no escape produced', () => {
    expect(() => unescapeNul('a\uF000b')).toThrow(/not an escaped string/);
    expect(() => unescapeNul('a\uF000')).toThrow(/not an escaped string/);
  });

  describe('in PostgreSQL', () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase([]);
      await db.pool.query('CREATE TABLE docs (i int PRIMARY KEY, doc jsonb NOT NULL)');
    }, 60_000);
    afterAll(() => db?.drop());

    it('stores every document in jsonb and reads it back as it was; SQL reads the members it needs', async () => {
      const docs = awkward.map((d, i) => ({ kind: 'K', bidId: `0x${i}`, ...d }));
      await db.pool.query(
        'INSERT INTO docs SELECT n::int, d FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS e(d, n)',
        [jsonbArrayText(docs)],
      );
      for (const [i, d] of docs.entries())
        await db.pool.query('INSERT INTO docs VALUES ($1, $2::jsonb)', [100 + i, jsonbText(d)]);
      const { rows } = await db.pool.query<{ i: number; doc: object; kind: string; bid: string }>(
        `SELECT i, doc, doc->>'kind' AS kind, doc->>'bidId' AS bid FROM docs ORDER BY i`,
      );
      expect(rows.map((r) => fromJsonb(r.doc))).toEqual([...docs, ...docs]);
      expect(rows.map((r) => r.kind)).toEqual(rows.map(() => 'K'));
      expect(rows.map((r) => r.bid)).toEqual([...docs, ...docs].map((d) => d.bidId));
    });
  });
});
