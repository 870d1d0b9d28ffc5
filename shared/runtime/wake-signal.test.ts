import { describe, expect, it } from 'vitest';
import { WakeSignal } from './wake-signal.js';

describe('WakeSignal', () => {
  it('wakes a sleeper at once, remembers a wake that came before the sleep, and forgets it on reset', async () => {
    const w = new WakeSignal();
    let t = performance.now();
    setTimeout(() => w.wake(), 20);
    await w.sleep(5_000);
    expect(performance.now() - t).toBeLessThan(1_000);

    w.reset();
    w.wake(); // arrives while the loop is busy
    t = performance.now();
    await w.sleep(5_000);
    expect(performance.now() - t).toBeLessThan(50);

    w.reset();
    t = performance.now();
    await w.sleep(60); // nothing pending: the timeout ends the sleep
    expect(performance.now() - t).toBeGreaterThanOrEqual(55);
  });

  it('returns when its abort signal fires', async () => {
    const w = new WakeSignal();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const t = performance.now();
    await w.sleep(5_000, controller.signal);
    expect(performance.now() - t).toBeLessThan(1_000);
  });
});
