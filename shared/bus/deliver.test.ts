import { describe, expect, it } from 'vitest';
import { createLogger } from '../logging/logger.js';
import { deliverBatch, type DeliveryOptions } from './deliver.js';
import type { BusMessage, DeliveryObserver } from './port.js';

const message = (offset: number): BusMessage => ({
  topic: 't',
  partition: 0,
  offset: BigInt(offset),
  key: 'k',
  value: String(offset),
  headers: {},
  timestamp: new Date(0),
});

/** deliverBatch with its adapter side in memory: calls and commits are recorded. */
function delivery(observer: DeliveryObserver) {
  const calls: number[][] = [];
  const commits: Array<[bigint, bigint]> = [];
  const warnings: string[] = [];
  const log = createLogger({ level: 'silent' });
  log.warn = ((_: unknown, msg: string) => void warnings.push(msg)) as typeof log.warn;
  const options: DeliveryOptions = {
    handle: async (batch) => void calls.push(batch.map((m) => Number(m.offset))),
    maxAttempts: 3,
    signal: new AbortController().signal,
    log,
    group: 'g',
    recordAttempt: async () => 1,
    forgetAttempt: async () => undefined,
    startBatchAttempt: async () => true,
    commit: async (from, next) => void commits.push([from, next]),
    deadLetter: async () => undefined,
    settled: () => undefined,
    observer,
  };
  return { options, calls, commits, warnings };
}

describe('deliverBatch and its observer', () => {
  it('tells the observer of a committed batch with its size', async () => {
    const told: Array<[string, string, number]> = [];
    const d = delivery({
      handled: (group, topic, count) => void told.push([group, topic, count]),
      failed: () => undefined,
      deadLettered: () => undefined,
    });
    const result = await deliverBatch([message(0), message(1), message(2)], 0n, d.options);
    expect(result).toEqual({ outcome: 'done', next: 3n });
    expect(told).toEqual([['g', 't', 3]]);
  });

  it('an observer that throws changes nothing: the batch stays committed whole, once, and a warning says so', async () => {
    const d = delivery({
      handled: () => {
        throw new Error('metrics broke');
      },
      failed: () => undefined,
      deadLettered: () => undefined,
    });
    const result = await deliverBatch([message(5), message(6), message(7)], 5n, d.options);
    expect(result).toEqual({ outcome: 'done', next: 8n });
    expect(d.calls).toEqual([[5, 6, 7]]); // not split into single messages, not handled twice
    expect(d.commits).toEqual([[5n, 8n]]);
    expect(d.warnings).toEqual(['delivery observer failed']);
  });
});

describe('dead letters', () => {
  it('a value holding U+0000 is dead-lettered escaped, with a header saying so (the outbox cannot store it)', async () => {
    const dead: Array<{ value: string; headers?: Record<string, string> }> = [];
    const d = delivery({ handled: () => undefined, failed: () => undefined, deadLettered: () => undefined });
    const options: DeliveryOptions = {
      ...d.options,
      maxAttempts: 1,
      recordAttempt: async () => 1,
      handle: async () => {
        throw new Error('poison');
      },
      deadLetter: async (message) => void dead.push(message),
    };
    const poison = { ...message(0), value: '{"x":"a\u0000b"}' };
    const result = await deliverBatch([poison], 0n, options);
    expect(result.next).toBe(1n);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.value).toBe('{"x":"a\\u0000b"}');
    expect(dead[0]!.headers).toMatchObject({
      'x-dlq-value-escaped': 'nul',
      'x-dlq-error': expect.stringContaining('poison'),
    });
    // An ordinary value goes as it was, without the header.
    dead.length = 0;
    await deliverBatch([message(1)], 1n, options);
    expect(dead[0]!.value).toBe('1');
    expect(dead[0]!.headers).not.toHaveProperty('x-dlq-value-escaped');
  });
});

describe('HandlerContext.lastAttempt', () => {
  it('is true only on the attempt after which a failure is dead-lettered, never for a batch tried whole', async () => {
    const d = delivery({ handled: () => undefined, failed: () => undefined, deadLettered: () => undefined });
    const seen: Array<[string, number, boolean]> = [];
    const attempts = new Map<bigint, number>();
    const options: DeliveryOptions = {
      ...d.options,
      maxAttempts: 2,
      recordAttempt: async (offset) => {
        attempts.set(offset, (attempts.get(offset) ?? 0) + 1);
        return attempts.get(offset)!;
      },
      handle: async (batch, context) => {
        seen.push([batch.map((m) => m.value).join(','), context.attempt, context.lastAttempt]);
        throw new Error('fails');
      },
    };
    const result = await deliverBatch([message(0), message(1)], 0n, options);
    expect(result.next).toBe(2n);
    // The batch whole, then each message alone, twice: the second is its last.
    expect(seen).toEqual([
      ['0,1', 1, false],
      ['0', 1, false],
      ['0', 2, true],
      ['1', 1, false],
      ['1', 2, true],
    ]);
  });
});
