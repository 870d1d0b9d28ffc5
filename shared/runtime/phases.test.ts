import { describe, expect, it } from 'vitest';
import { PhaseClock } from './phases.js';

describe('PhaseClock', () => {
  it('gives each phase the time since the previous mark, in order', async () => {
    const clock = new PhaseClock();
    await new Promise((r) => setTimeout(r, 30));
    clock.mark('first');
    clock.mark('second');
    const seconds = clock.seconds;
    expect(Object.keys(seconds)).toEqual(['first', 'second']);
    expect(seconds.first).toBeGreaterThanOrEqual(0.025);
    expect(seconds.second).toBeLessThan(0.02);
  });
});
