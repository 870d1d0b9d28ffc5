import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { chainEventId, type ChainEvent } from '../../topics/index.js';
import { ClassifierEngine, type ClassifierInput } from './engine.js';
import type { JudgeEnv } from './facts.js';
import { watchedChains } from './index.js';
import { judge } from './judge.js';
import { batchContext, envAt, finalHeights, syntheticEngine, unansweredLock } from './judge-test-kit.js';
import { classifierMigrations } from './migrations.js';
import { DID_NAMES, DST, SRC, USER } from './swap-timeline.js';
import { SYNTHETIC_CHAIN_CLIENTS } from './synthetic-deployment.js';

/**
 * DESIGN §7: anything else is "unknown" once every window has closed. A swap whose destination (or source) chain
 * is not in chainClients was unknown at once, at any judgement: a pending swap whose chain the operator took out
 * of the configuration for a moment (a slip, or a restart while its RPC was down) became unknown for good at its
 * next event or clock move, losing its case, and a replay with the chain back gave another verdict. It now waits,
 * on a chain still watched, for the last window of the agreement (T+3E+3Tol, the relay's ConfirmOut) to close.
 */
const withoutDestination = (clocks: Record<string, number>): JudgeEnv => ({
  ...envAt(clocks),
  evmChainId: (chainId) => (chainId === SRC.chainId ? SRC.evm : undefined),
});

describe('a swap whose destination chain is not watched', () => {
  // T 1,000, E 2, Tol 1: the last window (T+3E+3Tol) ends at 1,009. The lock at 1,001, never answered.
  const { out, facts } = unansweredLock('lp', 91);

  it('is not decided before every window of its agreement closed on the chain still watched', () => {
    const early = judge(facts, withoutDestination({ [SRC.chainId]: 1_009 }));
    expect(early).toMatchObject({
      status: 'pending',
      wait: { kind: 'clock', chainId: SRC.chainId, until: 1_010 },
    });
  });

  it('is unknown once they closed (a chain not watched may be a non-EVM one)', () => {
    const late = judge(facts, withoutDestination({ [SRC.chainId]: 1_010 }));
    expect(
      late.status === 'decided' && [late.verdict.outcome, late.verdict.case, late.verdict.blockTime],
    ).toEqual(['unknown', null, out.blockTimestamp]);
  });

  describe('through the engine: the destination taken out of chainClients for a moment, and put back', () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase([classifierMigrations]);
    });
    afterAll(async () => {
      await db?.drop();
    });
    const input = (e: ChainEvent): ClassifierInput => ({ kind: 'event', id: chainEventId(e), event: e });
    const height = (chainId: string, height: number, blockTimestamp: number): ClassifierInput => ({
      kind: 'height',
      id: `${chainId}:height:${height}`,
      height: { chainId, stream: 'swap', height, blockTimestamp, lastEventId: null },
    });

    it('the LP that never answered is case 3, not unknown', async () => {
      const schema = 'unwatched_slip';
      const { engine, tables } = await syntheticEngine(db.pool, schema);
      await engine.handleBatch([input(out)], batchContext());
      await engine.handleBatch(
        [height(SRC.chainId, 1, 1_002), height(DST.chainId, 1, 1_002)],
        batchContext(),
      );
      // Restarted with the destination chain missing from chainClients: the user's ConfirmOut judges the swap.
      const slipped = new ClassifierEngine({
        pool: db.pool,
        tables,
        group: schema,
        chains: watchedChains(SYNTHETIC_CHAIN_CLIENTS.filter((c) => c.chainId === SRC.chainId)),
        did: {
          names: (a) => DID_NAMES[a.toLowerCase()] ?? [],
          request: () => undefined,
          stop: () => undefined,
        },
        log: createLogger({ level: 'silent' }),
      });
      const confirmOut: ChainEvent = {
        kind: 'ConfirmOut',
        chainId: SRC.chainId,
        contract: out.contract,
        blockNumber: out.blockNumber + 1,
        blockTimestamp: 1_003,
        txHash: '0x' + 'c0'.repeat(32),
        logIndex: 0,
        txFrom: USER.address,
        transferId: out.transferId,
        preimage: '0x' + '01'.repeat(32),
      };
      await slipped.handleBatch([input(confirmOut)], batchContext());
      await slipped.handleBatch([height(SRC.chainId, 2, 1_004)], batchContext());
      // Put back: every clock past every window.
      for (const h of finalHeights(2_000)) await engine.handleBatch([h], batchContext());
      const { rows } = await db.pool.query<{
        verdict: { outcome: string; case: number | null; party: string };
      }>(`SELECT verdict FROM ${tables.verdicts} WHERE bid_id = $1`, [facts.bidId]);
      expect(rows.map((r) => [r.verdict.outcome, r.verdict.case, r.verdict.party])).toEqual([
        ['violation', 3, 'lp'],
      ]);
      void DST;
    });
  });
});
