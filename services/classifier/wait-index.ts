/**
 * The pending swaps' waits, indexed by what ends them: a chain's clock move finds the swaps it releases
 * without looking at every pending swap (a replay holds thousands pending and moves a clock at every height).
 * Clock and complaint waits sit in min-heaps by `until`; an entry whose swap has waited for something else
 * since is stale and dropped when it comes up (the current wait is the one in `current`, by identity).
 */
import { MinHeap } from './min-heap.js';
import type { Wait } from './working-set.js';

interface Entry {
  until: number;
  bid: string;
  wait: Wait;
}

export class WaitIndex {
  private readonly current = new Map<string, Wait>();
  private readonly byChain = new Map<string, MinHeap<Entry>>();
  private readonly complaints = new MinHeap<Entry>(untilOf);

  /** The swap now waits for `wait` (null: for nothing, decided or not waiting). */
  set(bid: string, wait: Wait | null): void {
    if (wait === null) {
      this.current.delete(bid);
      return;
    }
    if (this.current.get(bid) === wait) return;
    this.current.set(bid, wait);
    if (wait.kind === 'clock') {
      let heap = this.byChain.get(wait.chainId);
      if (!heap) this.byChain.set(wait.chainId, (heap = new MinHeap<Entry>(untilOf)));
      heap.push({ until: wait.until, bid, wait });
    } else if (wait.kind === 'complaints') this.complaints.push({ until: wait.until, bid, wait });
  }

  /** Swaps waiting for `chainId`'s clock to reach `now` or less, in bid order. */
  dueOnClock(chainId: string, now: number): string[] {
    const heap = this.byChain.get(chainId);
    return heap ? this.due(heap, now) : [];
  }

  /** Swaps waiting for complaints up to `seen` or less, in bid order. */
  dueOnComplaints(seen: number): string[] {
    return this.due(this.complaints, seen);
  }

  /** Any other wait (a DID answer, rare): a scan, in bid order. */
  where(due: (wait: Wait) => boolean): string[] {
    const bids: string[] = [];
    for (const [bid, wait] of this.current) if (due(wait)) bids.push(bid);
    return bids.sort();
  }

  /**
   * Takes the due entries off the heap: the caller judges each of those swaps again, which puts its next wait
   * (if any) back in.
   */
  private due(heap: MinHeap<Entry>, bound: number): string[] {
    const bids = new Set<string>();
    for (const entry of heap.takeWhileBelow(bound, true))
      if (this.current.get(entry.bid) === entry.wait) bids.add(entry.bid);
    return [...bids].sort();
  }
}

const untilOf = (entry: Entry): number => entry.until;
