import { describe, expect, it } from 'vitest';
import { CachedLookup, type LookupOutcome } from './cached-lookup.js';

/**
 * Points asks KYC and DID while it answers a query: a lookup still waiting when the process stops (the
 * runner's stopSignal) ends at once, the query answers the last known value flagged stale, and the service is
 * not taken for down (no 'failed' outcome, no error reported, no back-off for the next lookups).
 */
describe('a KYC or DID lookup the stop cut off', () => {
  it('ends at once and counts no failure of the service', async () => {
    const stop = new AbortController();
    const outcomes: LookupOutcome[] = [];
    const errors: string[] = [];
    let asked = 0;
    const kyc = new CachedLookup<boolean>({
      name: 'kyc',
      // A KYC service that never answers, until the signal ends the request.
      fetch: (_key, signal) => {
        asked += 1;
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      },
      refreshIntervalMs: 60_000,
      timeoutMs: 20_000,
      stopSignal: stop.signal,
      onOutcome: (outcome) => outcomes.push(outcome),
      onError: (_key, error) => errors.push(error.message),
    });
    const answer = kyc.get('0xaa');
    await new Promise((r) => setTimeout(r, 20));
    const stoppedAt = Date.now();
    stop.abort();
    expect(await answer).toEqual({ value: undefined, stale: true, fetchedAtMs: null });
    expect(Date.now() - stoppedAt).toBeLessThan(500);
    expect(outcomes).toEqual([]);
    expect(errors).toEqual([]);
    expect(kyc.down).toBe(false);
    expect(asked).toBe(1);
  });
});
