import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Archive } from '../../shared/archive/port.js';
import { ArchiveDocumentTooLarge, MAX_DOCUMENT_BYTES } from '../../shared/archive/rules.js';

export function archiveConformanceSuite(
  name: string,
  make: () => Promise<{ archive: Archive; cleanup(): Promise<void> }>,
  options: { skip?: string } = {},
) {
  const suite = options.skip ? describe.skip : describe;
  suite(`Archive conformance: ${name}`, () => {
    let archive: Archive;
    let cleanup: () => Promise<void>;
    beforeAll(async () => ({ archive, cleanup } = await make()));
    afterAll(async () => cleanup?.());
    const collection = () => `c_${randomBytes(4).toString('hex')}`;

    it('stores a raw document and gives it back unchanged', async () => {
      const c = collection();
      const doc = {
        type: 'update_height',
        height: 1_234_565,
        data: [
          {
            event: { blockNumber: '0x12d687', topics: ['0xabc'] },
            amount: '115792089237316195423570985008687907853269984665640564039457584007913129639935',
          },
        ],
        nested: { unicode: 'Ωmoic ✓', empty: [], nil: null, flag: false },
      };
      expect(await archive.put(c, 'doc-1', doc)).toBe(true);
      const back = await archive.get(c, 'doc-1');
      expect(back?.id).toBe('doc-1');
      expect(back?.document).toEqual(doc);
      expect(back?.storedAt).toBeInstanceOf(Date);
      expect(await archive.get(c, 'missing')).toBeUndefined();
    });

    it('keeps the first write of an id (idempotent under redelivery)', async () => {
      const c = collection();
      expect(await archive.put(c, 'same', { v: 1 })).toBe(true);
      expect(await archive.put(c, 'same', { v: 2 })).toBe(false);
      expect((await archive.get(c, 'same'))?.document).toEqual({ v: 1 });
      expect(await archive.count(c)).toBe(1);
    });

    it('lists a collection in insertion order with a cursor, and keeps collections apart', async () => {
      const c = collection();
      const other = collection();
      const ids = ['z', 'a', 'm', 'b', 'y'];
      for (const id of ids) await archive.put(c, id, { id });
      await archive.put(other, 'x', {});
      const first = await archive.list(c, { limit: 3 });
      expect(first.map((d) => d.id)).toEqual(['z', 'a', 'm']);
      const rest = await archive.list(c, { after: 'm', limit: 10 });
      expect(rest.map((d) => d.id)).toEqual(['b', 'y']);
      expect(await archive.count(c)).toBe(5);
      expect(await archive.count(other)).toBe(1);
    });

    it('stores many documents at once, in order, first write winning', async () => {
      const c = collection();
      await archive.put(c, 'b', { v: 'first' });
      const stored = await archive.putMany(c, [
        { id: 'a', document: { v: 1 } },
        { id: 'b', document: { v: 'second' } },
        { id: 'c', document: { v: 3 } },
      ]);
      expect(stored).toBe(2);
      expect((await archive.list(c)).map((d) => [d.id, d.document])).toEqual([
        ['b', { v: 'first' }],
        ['a', { v: 1 }],
        ['c', { v: 3 }],
      ]);
      expect(await archive.putMany(c, [])).toBe(0);
    });

    it('concurrent puts of one id: exactly one wins, and its document is the one stored', async () => {
      const c = collection();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => archive.put(c, 'contended', { writer: i })),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results.indexOf(true);
      expect((await archive.get(c, 'contended'))?.document).toEqual({ writer: winner });
      expect(await archive.count(c)).toBe(1);
      expect((await archive.list(c)).map((d) => d.id)).toEqual(['contended']);
    });

    it('pages through a large collection in insertion order, each document once', async () => {
      const c = collection();
      const total = 2_500;
      const ids = Array.from({ length: total }, (_, i) => `doc-${(i * 7_919) % total}`); // not sorted by id
      for (let i = 0; i < total; i += 500) {
        const stored = await archive.putMany(
          c,
          ids.slice(i, i + 500).map((id, j) => ({ id, document: { n: i + j } })),
        );
        expect(stored).toBe(500);
      }
      const paged: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await archive.list<{ n: number }>(c, { after, limit: 300 });
        if (page.length === 0) break;
        paged.push(...page.map((d) => d.id));
        after = page.at(-1)!.id;
      }
      expect(paged).toEqual(ids);
      expect(await archive.count(c)).toBe(total);
    });

    // A chain client's body is any JSON its loose schema takes: what MongoDB cannot hold as BSON must not fail
    // the batch (one body would stop its chain's stream) nor come back changed.
    it('stores a key holding U+0000, and the batch with it', async () => {
      const c = collection();
      const odd = { event_parse: { 'a\u0000b': '1' } };
      const stored = await archive.putMany(c, [
        { id: 'ok', document: { v: 1 } },
        { id: 'odd', document: odd },
      ]);
      expect(stored).toBe(2);
      expect((await archive.get(c, 'odd'))?.document).toEqual(odd);
      expect((await archive.list(c)).map((d) => d.document)).toEqual([{ v: 1 }, odd]);
    });

    it('gives back unchanged what BSON, MongoDB or FerretDB would refuse or alter', async () => {
      const c = collection();
      let deep: unknown = 'bottom';
      for (let i = 0; i < 120; i++) deep = i % 2 ? { d: deep } : [deep, i];
      const documents = [
        { s: 'a\u0000b', key: { '\u0000': 0 } },
        { $op: 1, nested: { $gt: 2, 'a.b': 3, '.': 4, '': 5 } },
        { lone: '\ud800x\udc00', pair: '😀', key: { ['\udfff']: 1 } },
        {
          nested: [[1, [2, []]], 3],
          grid: [
            [0, 1],
            [1, 0],
          ],
        },
        { deep },
        ['top', ['level', 'array']],
        'a bare string',
        12.5,
        null,
      ];
      await archive.putMany(
        c,
        documents.map((document, i) => ({ id: `d${i}`, document })),
      );
      expect((await archive.list(c)).map((d) => d.document)).toEqual(documents);
      for (const [i, document] of documents.entries())
        expect((await archive.get(c, `d${i}`))?.document).toEqual(document);
    });

    it('stores what is not JSON as its JSON text gives it: undefined members absent, not null', async () => {
      const c = collection();
      await archive.put(c, 'u', { a: undefined, b: 1 });
      expect(Object.keys((await archive.get<object>(c, 'u'))!.document)).toEqual(['b']);
      class Point {
        constructor(readonly x: number) {}
      }
      const document = {
        list: [undefined, NaN, -Infinity, () => 1],
        when: new Date(0),
        zero: -0,
        point: new Point(2),
        own: { toJSON: () => 'mine' },
        fn: () => 1,
      };
      await archive.put(c, 'not json', document);
      const back = (await archive.get(c, 'not json'))!.document;
      expect(back).toStrictEqual(JSON.parse(JSON.stringify(document)));
      expect(Object.is((back as { zero: number }).zero, 0)).toBe(true);
      await expect(archive.put(c, 'nothing', undefined)).rejects.toThrow(TypeError);
    });

    it('lists no documents for limit 0, and refuses a limit that is not an integer ≥ 0', async () => {
      const c = collection();
      await archive.putMany(c, [
        { id: 'a', document: {} },
        { id: 'b', document: {} },
      ]);
      expect(await archive.list(c, { limit: 0 })).toEqual([]);
      expect((await archive.list(c, { limit: 1 })).map((d) => d.id)).toEqual(['a']);
      for (const limit of [-1, 1.5, NaN, Infinity])
        await expect(archive.list(c, { limit })).rejects.toThrow(RangeError);
    });

    it("pages after the document whose id is '' (an id like any other)", async () => {
      const c = collection();
      await archive.putMany(c, [
        { id: 'x0', document: {} },
        { id: '', document: { empty: true } },
        { id: 'x', document: {} },
      ]);
      expect((await archive.get(c, ''))?.document).toEqual({ empty: true });
      expect((await archive.list(c, { after: '' })).map((d) => d.id)).toEqual(['x']);
      // After an id never stored: from the start.
      expect((await archive.list(c, { after: 'never' })).map((d) => d.id)).toEqual(['x0', '', 'x']);
    });

    it('refuses a document over MAX_DOCUMENT_BYTES of JSON, the whole batch before writing any', async () => {
      const c = collection();
      const big = { blob: 'x'.repeat(17 * 1024 * 1024) };
      const refusal = archive.putMany(c, [
        { id: 'small', document: { v: 1 } },
        { id: 'big', document: big },
      ]);
      await expect(refusal).rejects.toThrow(ArchiveDocumentTooLarge);
      await expect(refusal).rejects.toThrow(`${c}/big is 17825803 bytes of JSON, over the archive's limit`);
      expect(await archive.count(c)).toBe(0);
      // Counted in UTF-8 bytes: 'é' is 2.
      const wide = { s: 'é'.repeat(MAX_DOCUMENT_BYTES / 2) };
      await expect(archive.put(c, 'wide', wide)).rejects.toThrow(ArchiveDocumentTooLarge);
    }, 60_000);

    it('stores a document just under the limit, also one whose BSON would be larger than 16 MiB', async () => {
      const c = collection();
      const near = { blob: 'y'.repeat(MAX_DOCUMENT_BYTES - 20) };
      expect(JSON.stringify(near).length).toBeLessThanOrEqual(MAX_DOCUMENT_BYTES);
      expect(await archive.put(c, 'near', near)).toBe(true);
      expect((await archive.get(c, 'near'))?.document).toEqual(near);
      // 3 MB of JSON; as BSON each element also carries its index as a key: over 16 MiB.
      const zeros = { zeros: new Array<number>(1_500_000).fill(0) };
      expect(await archive.put(c, 'zeros', zeros)).toBe(true);
      expect((await archive.get(c, 'zeros'))?.document).toEqual(zeros);
    }, 60_000);

    it('stores concurrent puts of distinct ids without loss', async () => {
      const c = collection();
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => archive.put(c, `id-${i}`, { i })),
      );
      expect(results.every(Boolean)).toBe(true);
      expect(await archive.count(c)).toBe(50);
    });
  });
}
