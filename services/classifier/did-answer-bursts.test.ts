/**
 * DID answers come in bursts (a false lpSign's candidates are asked for together): the engine judges the swaps
 * waiting for a burst in one transaction (engine.ts didAnswered), instead of one transaction per answer, saving
 * the signers it recovered with it, and a failed judging fails every answer it took (each DID lookup is then
 * retried) without stopping later ones.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import type { SwapVerdict } from '../../topics/index.js';
import { takeNewSigners } from './consent.js';
import type { DidNames } from './did-source.js';
import type { ClassifierInput } from './engine.js';
import { batchContext, finalHeights, syntheticEngine, unansweredLock } from './judge-test-kit.js';
import { classifierMigrations } from './migrations.js';
import { SIGNER_MEMO } from './signer-memo.js';
import { DID_NAMES } from './swap-timeline.js';

const SWAPS = 5;

describe('DID answers in bursts', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([classifierMigrations]);
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it('judge the swaps waiting for a burst in one transaction; a failed one fails its answers only', async () => {
    const known = new Map<string, readonly string[]>();
    const requested = new Set<string>();
    const did: DidNames = {
      names: (address) => known.get(address),
      request: (address) => void requested.add(address),
      stop: () => undefined,
    };
    const { engine, tables } = await syntheticEngine(db.pool, 'bursts', undefined, { did });
    // Locks signed by a stranger for the LP, never answered: case 2 once every candidate is ruled out.
    const inputs: ClassifierInput[] = Array.from({ length: SWAPS }, (_, i) => ({
      kind: 'event',
      id: `bursts-${i}`,
      event: unansweredLock('stranger', 500 + i).out,
    }));
    await engine.handleBatch([...inputs, ...finalHeights(2_000)], batchContext());

    const connect = vi.spyOn(db.pool, 'connect');
    const answer = (addresses: string[]) =>
      Promise.allSettled(
        addresses.map((address) => {
          known.set(address, DID_NAMES[address] ?? []);
          return engine.didAnswered(address);
        }),
      );

    let round = [...requested];
    requested.clear();
    let rounds = 0;
    let failedOnce = false;
    for (; round.length > 0; rounds++) {
      if (!failedOnce && round.length >= SWAPS) {
        // A burst whose judging fails: every answer of it fails (each DID lookup is then retried: below).
        failedOnce = true;
        connect.mockClear();
        connect.mockImplementationOnce(() => Promise.reject(new Error('database down')));
        const failed = await answer(round);
        expect(failed.map((r) => r.status)).toEqual(round.map(() => 'rejected'));
        expect(connect).toHaveBeenCalledTimes(1);
        expect(requested.size).toBe(0);
      }
      connect.mockClear();
      const settled = await answer(round);
      expect(settled.every((r) => r.status === 'fulfilled')).toBe(true);
      expect(connect).toHaveBeenCalledTimes(1);
      round = [...requested];
      requested.clear();
      if (rounds > 40) throw new Error('no progress');
    }
    expect(failedOnce).toBe(true);
    // One at a time, each swap's 8 or more candidates took a round each; asked together, about log2 of that.
    expect(rounds).toBeLessThanOrEqual(6);

    const { rows } = await db.pool.query<{ verdict: SwapVerdict }>(`SELECT verdict FROM ${tables.verdicts}`);
    expect(rows.map((r) => r.verdict.case)).toEqual(inputs.map(() => 2));
    // What the judgings recovered was saved with them (a replay recovers none of it again): nothing is left.
    expect(takeNewSigners()).toEqual([]);
    const saved = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${SIGNER_MEMO}`);
    expect(saved.rows[0]!.n).toBeGreaterThanOrEqual(8 * SWAPS);
  });
});
