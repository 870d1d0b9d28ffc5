import { describe, expect, it } from 'vitest';
import { WaitIndex } from './wait-index.js';
import type { Wait } from './working-set.js';

const clock = (chainId: string, until: number): Wait => ({ kind: 'clock', chainId, until });

describe('WaitIndex', () => {
  it('gives the swaps a clock move releases, in bid order, once, and only on their chain', () => {
    const index = new WaitIndex();
    index.set('c', clock('1', 30));
    index.set('a', clock('1', 10));
    index.set('b', clock('1', 20));
    index.set('x', clock('2', 5));
    expect(index.dueOnClock('1', 5)).toEqual([]);
    expect(index.dueOnClock('1', 20)).toEqual(['a', 'b']);
    // Taken off: the caller judged them again (and put their next waits).
    expect(index.dueOnClock('1', 20)).toEqual([]);
    expect(index.dueOnClock('1', 100)).toEqual(['c']);
    expect(index.dueOnClock('2', 100)).toEqual(['x']);
  });

  it('forgets a wait replaced by another or ended (decided)', () => {
    const index = new WaitIndex();
    index.set('a', clock('1', 10));
    index.set('a', clock('1', 50));
    index.set('b', clock('1', 10));
    index.set('b', null);
    index.set('c', clock('1', 10));
    index.set('c', { kind: 'complaints', until: 10 });
    expect(index.dueOnClock('1', 20)).toEqual([]);
    expect(index.dueOnComplaints(10)).toEqual(['c']);
    expect(index.dueOnClock('1', 50)).toEqual(['a']);
  });

  it('finds DID waits by a scan, in bid order', () => {
    const index = new WaitIndex();
    index.set('b', { kind: 'did', address: '0xab' });
    index.set('a', { kind: 'did', address: '0xab' });
    index.set('c', clock('1', 1));
    expect(index.where((w) => w.kind === 'did' && w.address === '0xab')).toEqual(['a', 'b']);
  });

  it('keeps heap order through many inserts and removals', () => {
    const index = new WaitIndex();
    const untils = Array.from({ length: 500 }, (_, i) => (i * 7919) % 1000);
    untils.forEach((u, i) => index.set(`s${String(i).padStart(3, '0')}`, clock('1', u)));
    const released: string[] = [];
    for (let now = 0; now < 1000; now += 37) {
      const due = index.dueOnClock('1', now);
      expect(due).toEqual([...due].sort());
      for (const bid of due) expect(untils[Number(bid.slice(1))]).toBeLessThanOrEqual(now);
      released.push(...due);
    }
    released.push(...index.dueOnClock('1', 1000));
    expect(released.sort()).toEqual(untils.map((_, i) => `s${String(i).padStart(3, '0')}`));
  });
});
