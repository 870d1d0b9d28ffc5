import { describe, expect, it } from 'vitest';
import { singleFlight } from './single-flight.js';

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
