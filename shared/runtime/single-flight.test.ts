import { describe, expect, it } from 'vitest';
import { cachedFor, singleFlight } from './single-flight.js';

describe('singleFlight', () => {
  it('shares a call in flight, runs again once it settled, and after a failure', async () => {
    let runs = 0;
    let fail = false;
    const read = singleFlight(async () => {
      runs += 1;
      await new Promise((resolve) => setTimeout(resolve, 10));
      if (fail) throw new Error('down');
      return runs;
    });
    expect(await Promise.all([read(), read()])).toEqual([1, 1]);
    expect(await read()).toBe(2);
    fail = true;
    await expect(Promise.all([read(), read()])).rejects.toThrow('down');
    fail = false;
    expect(await read()).toBe(4);
  });
});

describe('cachedFor', () => {
  it('reuses a result for its time to live, keeps no failure, and shares the call in flight', async () => {
    let clock = 0;
    let runs = 0;
    let fail = false;
    const read = cachedFor(
      1_000,
      async () => {
        runs += 1;
        if (fail) throw new Error('down');
        return runs;
      },
      () => clock,
    );
    expect(await Promise.all([read(), read()])).toEqual([1, 1]);
    clock = 999;
    expect(await read()).toBe(1);
    clock = 1_000;
    expect(await read()).toBe(2);
    clock = 2_000;
    fail = true;
    await expect(read()).rejects.toThrow('down');
    fail = false;
    expect(await read()).toBe(4);
    expect(runs).toBe(4);
  });
});
