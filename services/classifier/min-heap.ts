/**
 * A binary min-heap of items by a number each carries (a wait's end, an orphan's expiry): what a clock move
 * releases is found without a scan. The pending swaps' waits (wait-index.ts) and the orphans' expiries
 * (orphan-retention.ts) both use it.
 */
export class MinHeap<T> {
  private readonly items: T[] = [];

  constructor(private readonly keyOf: (item: T) => number) {}

  get size(): number {
    return this.items.length;
  }

  push(item: T): void {
    const { items, keyOf } = this;
    const key = keyOf(item);
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (keyOf(items[parent]!) <= key) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = item;
  }

  /** The smallest key, or undefined when empty. */
  peekKey(): number | undefined {
    return this.items.length > 0 ? this.keyOf(this.items[0]!) : undefined;
  }

  /** Takes off the item with the smallest key (undefined when empty). */
  pop(): T | undefined {
    const { items, keyOf } = this;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    const lastKey = keyOf(last);
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && keyOf(items[right]!) < keyOf(items[left]!) ? right : left;
      if (keyOf(items[child]!) >= lastKey) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
    return top;
  }

  /** Takes off every item whose key is below `bound` (`inclusive`: at most `bound`), smallest first. */
  *takeWhileBelow(bound: number, inclusive = false): Generator<T> {
    for (let key = this.peekKey(); key !== undefined && (key < bound || (inclusive && key === bound));) {
      yield this.pop()!;
      key = this.peekKey();
    }
  }

  /** Keeps only the items `keep` says (a rebuild: for dropping many at once). */
  retain(keep: (item: T) => boolean): void {
    const kept = this.items.filter(keep);
    this.items.length = 0;
    for (const item of kept) this.push(item);
  }
}
