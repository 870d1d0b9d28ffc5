import { describe, expect, it } from 'vitest';
import type { EventBus, PartitionLag } from './port.js';
import { consumeToEnds, leftBefore, consumeTarget } from './consume-to-ends.js';

/**
 * A deployment at work: every look at the lag finds more messages published (`perLook`), while the replay
 * group handles up to `handled` a look. The group never sees a lag of 0.
 */
function busyBus(start: { end: bigint; position: bigint }, perLook: bigint, handled: bigint) {
  const partitions = new Map([['t/0', { ...start }]]);
  let looks = 0;
  const bus = {
    lag: async (group: string): Promise<PartitionLag[]> => {
      looks++;
      const result: PartitionLag[] = [];
      for (const [key, p] of partitions) {
        const [topic, partition] = key.split('/') as [string, string];
        result.push({ group, topic, partition: Number(partition), lag: p.end - p.position, end: p.end });
        p.end += perLook;
        p.position = p.position + handled < p.end - 1n ? p.position + handled : p.end - 1n;
      }
      return result;
    },
  } as unknown as EventBus;
  return { bus, partitions, looks: () => looks };
}

describe('a group consumes to the ends its topics had when it began', () => {
  it('finishes on a topic that never stands still (a lag of 0 is never seen)', async () => {
    const { bus, looks } = busyBus({ end: 100n, position: 0n }, 3n, 20n);
    const target = await consumeTarget(bus, 'replay', ['t']);
    expect(target.total).toBe(100n);
    const progress: Array<[bigint, bigint]> = [];
    await consumeToEnds(bus, 'replay', ['t'], target, {
      pollMs: 1,
      timeoutMs: 5_000,
      onProgress: (done, left) => progress.push([done, left]),
    });
    // The target's look, then the group found at 20, 40, 60, 80 and 100 (done there, 15 messages behind).
    expect(looks()).toBe(6);
    expect(progress.at(0)).toEqual([0n, 100n]);
    expect(progress.at(-1)).toEqual([100n, 0n]);
  });

  it('counts nothing published after the ends, nor a partition created since', () => {
    const ends = new Map([['t/0', 50n]]);
    const lag = (partition: number, l: bigint, end: bigint): PartitionLag => ({
      group: 'g',
      topic: 't',
      partition,
      lag: l,
      end,
    });
    expect(leftBefore(ends, [lag(0, 30n, 60n)])).toBe(20n); // at 30: 20 before 50
    expect(leftBefore(ends, [lag(0, 5n, 60n)])).toBe(0n); // at 55: past the end it had
    expect(leftBefore(ends, [lag(0, 0n, 60n), lag(1, 9n, 9n)])).toBe(0n);
    // The topic created again since (its log shorter than the end read): to its end now, not for ever.
    expect(leftBefore(ends, [lag(0, 4n, 10n)])).toBe(4n);
    expect(leftBefore(ends, [lag(0, 0n, 10n)])).toBe(0n);
  });

  it('gives up at its timeout with what is left', async () => {
    const { bus } = busyBus({ end: 100n, position: 0n }, 0n, 0n);
    const target = await consumeTarget(bus, 'replay', ['t']);
    await expect(consumeToEnds(bus, 'replay', ['t'], target, { pollMs: 1, timeoutMs: 20 })).rejects.toThrow(
      /replay did not reach the ends of t in 20 ms \(100 message\(s\) left\)/,
    );
  });
});
