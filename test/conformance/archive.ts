import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Archive } from '../../shared/archive/port.js';

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
