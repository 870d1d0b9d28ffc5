import { describe, expect, it } from 'vitest';
import type pg from 'pg';
import { usePostgresBus } from '../../../test/support/postgres-bus.js';
import { waitFor } from '../../../test/support/wait.js';
import { createLogger } from '../../logging/logger.js';
import type { BusMessage, SubscribeOptions } from '../port.js';
import { PostgresBus } from './postgres-bus.js';

const MiB = 1024 * 1024;
/** The default bound of one read of the log (FETCH_BYTES), which a batch is cut from. */
const DEFAULT_FETCH_BYTES = 16 * MiB;
const log = createLogger({ level: 'silent' });

const valueBytes = (messages: readonly { value: string | null }[]) =>
  messages.reduce((sum, m) => sum + Buffer.byteLength(m.value ?? ''), 0);

/** A pool whose query results are measured: the value bytes of every read of bus_messages' rows, in order. */
function measuredPool(pool: pg.Pool): { pool: pg.Pool; reads: number[] } {
  const reads: number[] = [];
  const measured = new Proxy(pool, {
    get(target, prop) {
      const original = Reflect.get(target, prop, target) as unknown;
      if (prop !== 'query') return typeof original === 'function' ? original.bind(target) : original;
      return async (...args: Parameters<pg.Pool['query']>) => {
        const result = await (target.query as (...a: unknown[]) => Promise<pg.QueryResult>)(...args);
        const text = typeof args[0] === 'string' ? args[0] : '';
        if (/FROM bus_messages/.test(text) && result.rows[0]?.offset !== undefined)
          reads.push(valueBytes(result.rows as Array<{ value: string | null }>));
        return result;
      };
    },
  });
  return { pool: measured, reads };
}

/** Subscribes `options`, records what each handler call got, and stops once `total` messages came. */
async function consumeAll(
  bus: PostgresBus,
  options: Omit<SubscribeOptions, 'handler' | 'batchHandler'> & { oneAtATime?: boolean },
  total: number,
  timeoutMs = 30_000,
): Promise<{ batches: BusMessage[][]; ms: number }> {
  const batches: BusMessage[][] = [];
  const started = performance.now();
  const record = async (messages: readonly BusMessage[]) => void batches.push([...messages]);
  const subscription = await bus.subscribe(
    options.oneAtATime
      ? { ...options, handler: (message) => record([message]) }
      : { ...options, batchHandler: record },
  );
  try {
    await waitFor(() => batches.flat().length >= total, `${total} messages`, timeoutMs);
    return { batches, ms: performance.now() - started };
  } finally {
    await subscription.stop();
  }
}

/** Every offset from 0 to total - 1, once each, in order. */
function expectContiguous(batches: BusMessage[][], total: number): void {
  expect(batches.flat().map((m) => Number(m.offset))).toEqual(Array.from({ length: total }, (_, i) => i));
}

describe('postgres log: bytes held by a consumer', () => {
  const ctx = usePostgresBus([
    { name: 'big', partitions: 1, retentionMs: null },
    { name: 'cut', partitions: 1, retentionMs: null },
    { name: 'mixed', partitions: 1, retentionMs: null },
    { name: 'only', partitions: 1, retentionMs: null },
  ]);

  // 24 messages of 1 MiB (e.g. chain.events envelopes or archive documents near the Connector's limit).
  const BIG = 24;
  const bigValue = (i: number) => `${i}:`.padEnd(MiB, 'x');

  it('reads and hands a batch handler at most 16 MiB of values at a time, every message once and in order', async () => {
    for (let i = 0; i < BIG; i += 6) {
      await ctx.bus.publish(
        'big',
        Array.from({ length: 6 }, (_, j) => ({ key: 'k', value: bigValue(i + j) })),
      );
    }
    const { pool, reads } = measuredPool(ctx.db.pool);
    const bus = new PostgresBus({ pool, connectionString: ctx.db.url, log });
    try {
      const { batches } = await consumeAll(bus, { group: 'big-batches', topics: ['big'] }, BIG);
      expectContiguous(batches, BIG);
      expect(batches.flat().map((m) => m.value)).toEqual(Array.from({ length: BIG }, (_, i) => bigValue(i)));
      // Before, one read took the whole backlog (24 MiB; up to max(200, maxBatch) rows of any size) and
      // handed it over as one batch.
      expect(Math.max(...batches.map(valueBytes))).toBeLessThanOrEqual(DEFAULT_FETCH_BYTES);
      expect(Math.max(...reads)).toBeLessThanOrEqual(DEFAULT_FETCH_BYTES);
      expect(batches.length).toBeGreaterThanOrEqual(2);
    } finally {
      await bus.close();
    }
  });

  it('reads at most 16 MiB at a time for a one-message handler too', async () => {
    const { pool, reads } = measuredPool(ctx.db.pool);
    const bus = new PostgresBus({ pool, connectionString: ctx.db.url, log });
    try {
      const { batches } = await consumeAll(bus, { group: 'big-one', topics: ['big'], oneAtATime: true }, BIG);
      expectContiguous(batches, BIG);
      // Before: one read of 200 rows, here all 24 MiB.
      expect(Math.max(...reads)).toBeLessThanOrEqual(DEFAULT_FETCH_BYTES);
    } finally {
      await bus.close();
    }
  });

  it('goes on at once after a read cut by bytes, passes a message over the bound alone, skips nothing', async () => {
    const fetchBytes = 64 * 1024;
    // 20 KiB each (three to a read), and one of 200 KiB, over the bound by itself, in the middle.
    const values = Array.from({ length: 30 }, (_, i) =>
      `${i}:`.padEnd(i === 13 ? 200 * 1024 : 20 * 1024, 'y'),
    );
    await ctx.bus.publish(
      'cut',
      values.map((value) => ({ key: 'k', value })),
    );
    const { pool, reads } = measuredPool(ctx.db.pool);
    // Neither the idle poll nor the linger may be waited for: every read but the last was cut by bytes.
    const bus = new PostgresBus({ pool, connectionString: ctx.db.url, log, idlePollMs: 60_000, fetchBytes });
    try {
      const { batches, ms } = await consumeAll(
        bus,
        { group: 'cut-g', topics: ['cut'], batchLingerMs: 5_000, maxBatch: 2 },
        values.length,
        10_000,
      );
      expectContiguous(batches, values.length);
      expect(batches.flat().map((m) => m.value)).toEqual(values);
      expect(ms).toBeLessThan(4_000);
      const over = batches.filter((b) => valueBytes(b) > fetchBytes);
      expect(over.map((b) => b.map((m) => Number(m.offset)))).toEqual([[13]]);
      expect(reads.filter((bytes) => bytes > fetchBytes)).toEqual([200 * 1024]);
      expect(Math.max(...batches.map((b) => b.length))).toBe(2);
      // Every message is over its share (64 KiB / 200): after the first read, which held their values back,
      // each read is summed at once rather than tried without the sum first.
      expect(reads.filter((bytes) => bytes === 0)).toHaveLength(1);
    } finally {
      await bus.close();
    }
  });

  it('reads small messages in full pages around large ones, and nothing out of order', async () => {
    const fetchBytes = 64 * 1024;
    // 50 bytes is within a message's share of the bound (64 KiB / 500), 20 KiB is not, 200 KiB is over it alone.
    const small = (i: number) => `${i}:`.padEnd(50, 's');
    const values = [
      ...Array.from({ length: 700 }, (_, i) => small(i)),
      '700:'.padEnd(20 * 1024, 'm'),
      ...Array.from({ length: 700 }, (_, i) => small(701 + i)),
      '1401:'.padEnd(200 * 1024, 'l'),
      ...Array.from({ length: 700 }, (_, i) => small(1402 + i)),
    ];
    for (let i = 0; i < values.length; i += 500)
      await ctx.bus.publish(
        'mixed',
        values.slice(i, i + 500).map((value) => ({ key: 'k', value })),
      );
    const { pool, reads } = measuredPool(ctx.db.pool);
    const bus = new PostgresBus({ pool, connectionString: ctx.db.url, log, idlePollMs: 60_000, fetchBytes });
    try {
      const { batches, ms } = await consumeAll(
        bus,
        { group: 'mixed-g', topics: ['mixed'], batchLingerMs: 5_000 },
        values.length,
        10_000,
      );
      expectContiguous(batches, values.length);
      expect(batches.flat().map((m) => m.value)).toEqual(values);
      expect(ms).toBeLessThan(4_000);
      expect(
        batches.filter((b) => valueBytes(b) > fetchBytes).map((b) => b.map((m) => Number(m.offset))),
      ).toEqual([[1401]]);
      expect(reads.filter((bytes) => bytes > fetchBytes)).toEqual([200 * 1024]);
      // Full batches of small messages: the large ones cut only the batches around them.
      expect(batches.filter((b) => b.length === 500).length).toBeGreaterThanOrEqual(2);
    } finally {
      await bus.close();
    }
  });

  it('counts under valuesOnly the values it reads, not those it passes over', async () => {
    const fetchBytes = 64 * 1024;
    // Messages of 100 KiB the subscriber passes over, between messages of 20 KiB it reads.
    const messages = Array.from({ length: 20 }, (_, i) =>
      i % 2
        ? { key: 'k', value: `${i}:`.padEnd(100 * 1024, 'o'), headers: { kind: 'other' } }
        : { key: 'k', value: `${i}:`.padEnd(20 * 1024, 'r'), headers: { kind: 'read' } },
    );
    await ctx.bus.publish('only', messages);
    const bus = new PostgresBus({ pool: ctx.db.pool, connectionString: ctx.db.url, log, fetchBytes });
    try {
      const { batches } = await consumeAll(
        bus,
        {
          group: 'only-g',
          topics: ['only'],
          batchLingerMs: 5_000,
          valuesOnly: { topic: 'only', header: 'kind', values: ['read'] },
        },
        messages.length,
        10_000,
      );
      expectContiguous(batches, messages.length);
      expect(batches.flat().map((m) => m.value)).toEqual(messages.map((m, i) => (i % 2 ? '' : m.value)));
      // Three messages read (60 KiB) to a batch: the ones passed over take no room.
      expect(batches.map((b) => b.length)).toEqual([6, 6, 6, 2]);
    } finally {
      await bus.close();
    }
  });

  it('refuses a fetchBytes that is not a positive integer', () => {
    for (const fetchBytes of [0, -1, 1.5]) {
      expect(
        () => new PostgresBus({ pool: ctx.db.pool, connectionString: ctx.db.url, log, fetchBytes }),
      ).toThrow(/fetchBytes/);
    }
  });
});
