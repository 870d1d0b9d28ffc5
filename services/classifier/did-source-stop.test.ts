import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { waitFor } from '../../test/support/wait.js';
import { HttpDidSource } from './did-source.js';

/**
 * The Classifier's DID lookups run beside its batches (a batch only asks, never waits), so a stop never waits
 * for one; it aborts those in flight, and a lookup the stop cut off is no failure of the DID support: not
 * counted (classifier_did_lookups_total{outcome="failed"}), not logged, not shown in /health. The swaps keep
 * waiting and are asked for again after the restart.
 */
describe('the DID source when the Classifier stops', () => {
  it('aborts a lookup in flight, and counts, logs and re-judges nothing for it', async () => {
    const signals: AbortSignal[] = [];
    const failures: string[] = [];
    const answers: string[] = [];
    const lines: string[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
    // A DID service that never answers (until the signal ends the request).
    const hangs: typeof fetch = (_url, init) => {
      const signal = init!.signal!;
      signals.push(signal);
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    };
    const did = new HttpDidSource({
      url: 'http://did.invalid',
      ttlMs: 60_000,
      timeoutMs: 20_000,
      log,
      onAnswer: async (address) => void answers.push(address),
      onFailure: (address) => void failures.push(address),
      fetch: hangs,
    });
    did.request('0x' + 'aa'.repeat(20));
    await waitFor(() => signals.length === 1, 'the lookup', 2_000);
    const stoppedAt = Date.now();
    did.stop();
    expect(signals[0]!.aborted).toBe(true);
    await new Promise((r) => setTimeout(r, 50));
    expect(Date.now() - stoppedAt).toBeLessThan(1_000);
    expect(failures).toEqual([]);
    expect(lines).toEqual([]);
    expect(answers).toEqual([]);
    expect(did.failingForSeconds()).toBeUndefined();
    // Nothing is asked after the stop.
    did.request('0x' + 'bb'.repeat(20));
    await new Promise((r) => setTimeout(r, 50));
    expect(signals).toHaveLength(1);
  });

  it('an answer arriving during the stop re-judges nothing (asked again after the restart)', async () => {
    let answer: ((response: Response) => void) | undefined;
    const answers: string[] = [];
    const did = new HttpDidSource({
      url: 'http://did.invalid',
      ttlMs: 60_000,
      log: createLogger({ level: 'silent' }),
      onAnswer: async (address) => void answers.push(address),
      // Answers even once aborted: a reply already on its way.
      fetch: () => new Promise<Response>((resolve) => (answer = resolve)),
    });
    did.request('0x' + 'cc'.repeat(20));
    await waitFor(() => answer !== undefined, 'the lookup', 2_000);
    did.stop();
    answer!(Response.json({ data: [{ name: 'lp.otmoic' }] }));
    await new Promise((r) => setTimeout(r, 50));
    expect(answers).toEqual([]);
  });
});
