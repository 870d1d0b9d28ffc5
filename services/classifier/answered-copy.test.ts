import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { chainEventId, type ChainEvent } from '../../topics/index.js';
import type { ClassifierInput } from './engine.js';
import { judge } from './judge.js';
import {
  batchContext,
  envAt,
  factsOf,
  finalHeights,
  HONEST_SWAP,
  syntheticEngine,
} from './judge-test-kit.js';
import { classifierMigrations } from './migrations.js';
import { buildTimeline, DST, SRC } from './swap-timeline.js';

/**
 * The user locks the same agreement twice (an SDK retry with a new preimage: same bid, another hashlock) and
 * the LP answers the later lock, on which the swap then completes. The swap is the earlier lock, which nobody
 * answered: the LP was blamed with case 3 although it carried the agreement out. Only the user can make such
 * a copy (the lock's sender is part of the bid).
 */
const spec = { ...HONEST_SWAP, copyOut: { at: 1000 } };
const t = buildTimeline(spec);
const source = t.streams[SRC.chainId]!;
const [first, copy] = source.filter((e) => e.kind === 'TransferOut') as Array<
  Extract<ChainEvent, { kind: 'TransferOut' }>
>;
// The LP's TransferIn, the user's ConfirmOut and the LP's ConfirmIn, all of the copy.
const events: ChainEvent[] = [...source, ...t.streams[DST.chainId]!].map((e) =>
  e.kind === 'TransferIn'
    ? { ...e, srcTransferId: copy!.transferId, hashlock: copy!.hashlock }
    : e.kind === 'ConfirmOut'
      ? { ...e, transferId: copy!.transferId }
      : e,
);
const shown = (verdict: { outcome: string; case: number | null; party: string | null; rule: string }) => [
  verdict.outcome,
  verdict.case,
  verdict.party,
];

describe('the LP answers the user’s second lock of the same agreement', () => {
  it('is not blamed: the verdict is unknown, saying which lock it answered', () => {
    const decided = judge(factsOf(t.bidId, events), envAt({ [SRC.chainId]: 2_000, [DST.chainId]: 2_000 }));
    expect(decided.status).toBe('decided');
    if (decided.status !== 'decided') return;
    expect(shown(decided.verdict)).toEqual(['unknown', null, null]);
    expect(decided.verdict.rule).toBe(
      `unknown: the LP answered another lock of this agreement (transfer ${copy!.transferId}) by T+2E = 1006, not the swap's (the earlier lock): the rules do not say which lock is the swap`,
    );
  });

  it('a TransferIn to the other lock that differs in more than its hashlock is no answer: case 3 stands', () => {
    const short = events.map((e) => (e.kind === 'TransferIn' ? { ...e, tokenAmount: '1' } : e));
    const decided = judge(factsOf(t.bidId, short), envAt({ [SRC.chainId]: 2_000, [DST.chainId]: 2_000 }));
    expect(decided.status === 'decided' && shown(decided.verdict)).toEqual(['violation', 3, 'lp']);
  });

  describe('through the engine, in either order of the two locks', () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase([classifierMigrations]);
    });
    afterAll(async () => {
      await db?.drop();
    });
    const input = (e: ChainEvent): ClassifierInput => ({ kind: 'event', id: chainEventId(e), event: e });

    for (const [name, order] of [
      ['the copy after the swap’s lock', events],
      ['the answer before the copy is seen', [...events.filter((e) => e !== copy), copy!]],
    ] as const) {
      it(name, async () => {
        const schema = `answered_copy_${order === events ? 'a' : 'b'}`;
        const { engine, tables } = await syntheticEngine(db.pool, schema);
        // One message at a time, as the topics deliver them, then every clock past every window.
        for (const e of order) await engine.handleBatch([input(e)], batchContext());
        for (const h of finalHeights(2_000)) await engine.handleBatch([h], batchContext());
        const { rows } = await db.pool.query<{ verdict: { outcome: string; case: number | null } }>(
          `SELECT verdict FROM ${tables.verdicts} WHERE bid_id = $1`,
          [t.bidId],
        );
        expect(rows.map((r) => [r.verdict.outcome, r.verdict.case])).toEqual([['unknown', null]]);
        expect(first!.transferId).not.toBe(copy!.transferId);
      });
    }
  });
});
