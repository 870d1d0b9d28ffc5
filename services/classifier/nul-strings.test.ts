/**
 * PostgreSQL text and jsonb cannot hold U+0000, and any string of an on-chain event can carry it. A real swap
 * (its TransferOut's fields hash to its bid) with U+0000 in its lpId or userSign failed the facts insert, so
 * its event was retried and dead-lettered and the swap never judged: a user could escape cases 5 and 7 with a
 * NUL in its own userSign. The facts are stored losslessly (jsonb-nul.ts): the swap is judged from the stored
 * strings exactly as from the events, live and in a replay, and its violation is published.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { signAgreement } from '../../shared/devnet/agreements.js';
import { createLogger } from '../../shared/logging/logger.js';
import { agreementOfTransferOut, bidIdOfAgreement } from '../../shared/otmoic/agreement.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import {
  chainEventId,
  swapVerdicts,
  topicSpec,
  violations,
  type ChainEvent,
  type SwapVerdict,
  type Violation,
} from '../../topics/index.js';
import { ClassifierEngine, type ClassifierInput } from './engine.js';
import type { TransferOut } from './facts.js';
import { watchedChains } from './index.js';
import { batchContext, envAt, factsOf, finalHeights } from './judge-test-kit.js';
import { judge } from './judge.js';
import { fromJsonb } from './jsonb-nul.js';
import { classifierMigrations } from './migrations.js';
import { compareDecisions, recordedDidNames } from './replay.js';
import { DID_NAMES, DST, LP, SRC, USER, buildTimeline, type TimelineSpec } from './swap-timeline.js';
import { SYNTHETIC_CHAIN_CLIENTS } from './synthetic-deployment.js';
import { classifierDdl, classifierTables } from './tables.js';

const NUL_LP_ID = 'lp\u0000x';
/** The DID service names the LP's address with the NUL lpId too (so the LP consented to that agreement). */
const names: Record<string, readonly string[]> = {
  ...DID_NAMES,
  [LP.address.toLowerCase()]: [...DID_NAMES[LP.address.toLowerCase()]!, NUL_LP_ID],
};

/** A lock the user made and the LP never answered (no TransferIn). */
const unanswered = (id: number): TimelineSpec => ({
  id,
  T: 1000,
  E: 3,
  Tol: 2,
  lpSign: 'lp',
  userSign: 'user',
  out: { kind: 'ok', at: 1000 },
  in: { kind: 'none' },
});
const lockOf = (id: number): TransferOut =>
  buildTimeline(unanswered(id)).streams[SRC.chainId]!.find(
    (e): e is TransferOut => e.kind === 'TransferOut',
  )!;

/** `out` with its own fields changed, signed again by both parties when `resign`, and the bid they hash to. */
function realSwap(out: TransferOut, change: Partial<TransferOut>, resign: boolean): TransferOut {
  let changed = { ...out, ...change };
  if (resign) {
    const signed = signAgreement(
      agreementOfTransferOut(changed),
      { userKey: USER.privateKey, lpKey: LP.privateKey },
      { srcEvmChainId: SRC.evm, dstEvmChainId: DST.evm },
    );
    changed = { ...changed, userSign: signed.userSign, lpSign: signed.lpSign };
  }
  return { ...changed, bidId: bidIdOfAgreement(agreementOfTransferOut(changed)) };
}

// LP id with NUL, both consents over it: case 3 on the LP, whose subject (and violation key) holds the NUL.
const nulLpId = realSwap(lockOf(1), { lpId: NUL_LP_ID }, true);
// userSign with a NUL after a genuine signature: whatever the rules make of it, as for its stored twin.
const nulUserSign = realSwap(lockOf(2), { userSign: lockOf(2).userSign + '\u0000' }, false);
// Not a swap (its fields no longer hash to its bid), recorded as foreign with its NUL.
const foreign: TransferOut = { ...lockOf(3), lpId: 'foreign\u0000' };
const events: ChainEvent[] = [nulLpId, nulUserSign, foreign];

const heights = finalHeights(2000);

/** What the rules make of a lock, from the events themselves (no storage in between). */
function byTheRules(out: TransferOut): SwapVerdict {
  const env = {
    ...envAt({ [SRC.chainId]: 2000, [DST.chainId]: 2000 }, 2000),
    didNames: (a: string) => names[a] ?? [],
  };
  const j = judge(factsOf(out.bidId, [out]), env);
  if (j.status !== 'decided') throw new Error(`pending: ${j.reason}`);
  return j.verdict;
}

describe('a swap with U+0000 in its strings', () => {
  let db: TestDatabase;
  let bus: PostgresBus;
  beforeAll(async () => {
    db = await createTestDatabase([classifierMigrations]);
    bus = new PostgresBus({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
    });
    await bus.ensureTopics([topicSpec(swapVerdicts, 1), topicSpec(violations, 1)]);
  }, 60_000);
  afterAll(async () => {
    await bus?.close();
    await db?.drop();
  });

  /** Each input its own transaction: the facts are read back from the table before every judgement. */
  async function run(schema: string, resident: boolean) {
    const tables = classifierTables(schema);
    await db.pool.query(`CREATE SCHEMA ${schema}; ${classifierDdl(tables)}`);
    const engine = new ClassifierEngine({
      pool: db.pool,
      tables,
      group: schema,
      chains: watchedChains(SYNTHETIC_CHAIN_CLIENTS),
      did: { names: (a) => names[a.toLowerCase()] ?? [], request: () => undefined, stop: () => undefined },
      log: createLogger({ level: 'silent' }),
      bus: resident ? undefined : bus,
      resident: resident ? 'keep' : undefined,
    });
    const context = batchContext();
    const inputs: ClassifierInput[] = events.map((e) => ({ kind: 'event', id: chainEventId(e), event: e }));
    for (const input of [...inputs, ...heights]) await engine.handleBatch([input], context);
    await engine.writeResident();
    return tables;
  }

  it('is judged from its stored facts as from its events, live and in a replay; its violation is published', async () => {
    const live = await run('nul_live', false);
    const { rows } = await db.pool.query<{ bid_id: string; verdict: SwapVerdict }>(
      `SELECT bid_id, verdict FROM ${live.verdicts}`,
    );
    const verdicts = new Map(rows.map((r) => [r.bid_id, fromJsonb(r.verdict)]));
    expect(verdicts.size).toBe(2);
    expect(verdicts.get(nulLpId.bidId)).toEqual(byTheRules(nulLpId));
    expect(verdicts.get(nulUserSign.bidId)).toEqual(byTheRules(nulUserSign));
    // Unanswered: case 3 on the LP for both (the NUL userSign proves nobody: the user's consent is no
    // condition of case 3).
    expect(verdicts.get(nulUserSign.bidId)).toMatchObject({ case: 3, party: 'lp', subject: 'lp-test' });
    expect(verdicts.get(nulUserSign.bidId)!.evidence).toMatchObject({ userConsent: false, lpConsent: true });
    expect(verdicts.get(nulLpId.bidId)!.evidence).toMatchObject({ userConsent: true, lpConsent: true });
    expect(verdicts.get(nulLpId.bidId)).toMatchObject({
      case: 3,
      party: 'lp',
      subject: NUL_LP_ID,
      lpId: NUL_LP_ID,
    });

    // The facts as stored are the events, exactly.
    const facts = await db.pool.query<{ facts: object }>(
      `SELECT facts FROM ${live.swaps} WHERE bid_id = $1`,
      [nulUserSign.bidId],
    );
    expect(fromJsonb(facts.rows[0]!.facts)).toMatchObject({ out: nulUserSign });
    const ignored = await db.pool.query<{ reason: string; event: object }>(
      `SELECT reason, event FROM ${live.ignoredOuts}`,
    );
    expect(ignored.rows.map((r) => ({ reason: r.reason, event: fromJsonb(r.event) }))).toEqual([
      { reason: 'foreign', event: foreign },
    ]);

    // Published: the violation's value keeps its NUL (JSON text), its key names the NUL in six characters.
    const published = await db.pool.query<{ topic: string; key: string; value: string }>(
      `SELECT topic, key, value FROM bus_messages WHERE topic IN ('swap.verdicts', 'violations') ORDER BY topic, key`,
    );
    // Both swaps are violations of the LP (case 3); the NUL lpId's key names the NUL in six characters.
    expect(published.rows.map((r) => r.topic)).toEqual([
      'swap.verdicts',
      'swap.verdicts',
      'violations',
      'violations',
    ]);
    const violation = published.rows.find((r) => r.key !== 'lp:lp-test' && r.topic === 'violations')!;
    expect(violation.key).toBe('lp:lp\\u0000x');
    expect((JSON.parse(violation.value) as { payload: Violation }).payload.subject).toBe(NUL_LP_ID);
    const dead = await db.pool.query(`SELECT 1 FROM bus_messages WHERE topic LIKE '%dlq%'`);
    expect(dead.rows).toEqual([]);

    // A replay decides on the DID answers the live verdicts recorded, NUL included.
    expect((await recordedDidNames(db.pool, live.verdicts)).get(nulLpId.bidId)).toEqual({
      [LP.address.toLowerCase()]: names[LP.address.toLowerCase()],
    });
    const replay = await run('nul_replay', true);
    for (const [liveTable, replayTable, column] of [
      [live.verdicts, replay.verdicts, 'verdict'],
      [live.violations, replay.violations, 'violation'],
      [live.swaps, replay.swaps, 'facts'],
    ] as const) {
      expect(await compareDecisions(db.pool, liveTable, replayTable, column)).toMatchObject({
        identical: true,
      });
    }
  }, 120_000);
});
