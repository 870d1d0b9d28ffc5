import { describe, expect, it } from 'vitest';
import { MinHeap } from './min-heap.js';

describe('MinHeap', () => {
  it('gives items back smallest key first, whatever the order they came in', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % 1_000;
    const heap = new MinHeap<{ key: number }>((i) => i.key);
    const keys = Array.from({ length: 2_000 }, random);
    for (const key of keys) heap.push({ key });
    const out: number[] = [];
    for (let item = heap.pop(); item !== undefined; item = heap.pop()) out.push(item.key);
    expect(out).toEqual([...keys].sort((a, b) => a - b));
    expect(heap.size).toBe(0);
  });

  it('takes off the keys below a bound, or at most it when inclusive, and keeps the rest', () => {
    const heap = new MinHeap<number>((n) => n);
    for (const n of [5, 1, 4, 2, 3, 3]) heap.push(n);
    expect([...heap.takeWhileBelow(3)]).toEqual([1, 2]);
    expect([...heap.takeWhileBelow(3, true)]).toEqual([3, 3]);
    heap.retain((n) => n !== 4);
    expect([...heap.takeWhileBelow(Infinity)]).toEqual([5]);
  });
});
