import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchedChains } from '../../services/classifier/index.js';
import { classifierDdl, classifierTables } from '../../services/classifier/tables.js';
import { ClassifierEngine, type ClassifierInput } from '../../services/classifier/engine.js';
import { replayClassifier } from '../../services/classifier/replay.js';
import { boundSignerMemo, DEFAULT_SIGNER_MEMO_ENTRIES } from '../../services/classifier/consent.js';
import { listMissingEvents, releaseMissingEvent } from '../../services/classifier/holds.js';
import { INVALID_COMPLAINT_HOLD_SECONDS } from '../../services/classifier/judge.js';
import type { DidSupport } from '../../services/stand-ins/did-support/index.js';
import { complaintFieldsOf, fileComplaint } from '../../shared/devnet/complaints.js';
import { bidIdOf } from '../../shared/devnet/agreements.js';
import { agreementOfTransferOut, bidIdOfAgreement } from '../../shared/otmoic/agreement.js';
import { deployDevnetContracts } from '../../shared/devnet/deploy.js';
import { compileContracts } from '../../contracts/compile.js';
import type { DevnetChain } from '../../shared/devnet/devnet.js';
import {
  lockSwap,
  runSwap,
  tryStep,
  type LockedSwap,
  type ScenarioOptions,
} from '../../shared/devnet/swap-scenarios.js';
import {
  chainEvents,
  chainHeights,
  decode,
  type ChainEvent,
  type ChainHeight,
  type SwapVerdict,
} from '../../topics/index.js';
import type { TestDatabase } from '../support/database.js';
import { DST, E, SRC, Tol, startPipeline, type Pipeline } from '../support/pipeline.js';
import { waitFor } from '../support/wait.js';

/**
 * The classifier on the devnet, behind our chain clients and the Connector: real contracts, genuine signed
 * agreements, exact block times, DID names from the devnet's registry through the DID support stand-in.
 */
describe('classifier end to end on the devnet', () => {
  let pipeline: Pipeline;
  let db: TestDatabase;
  let did: DidSupport;
  let ctx: Pipeline['ctx'];
  const src = () => pipeline.src();
  const dst = () => pipeline.dst();
  const options = (extra: Partial<ScenarioOptions> = {}) => pipeline.options(extra);
  /** `npm run replay -- classifier` on the pipeline's database and bus. */
  const replay = (extra: Partial<Parameters<typeof replayClassifier>[0]> = {}) =>
    replayClassifier({
      pool: db.pool,
      bus: ctx.bus,
      chainClients: ctx.config.chainClients!,
      didSupportUrl: did.url,
      log: ctx.log,
      ...extra,
    });

  async function verdictOf(bidId: string, timeoutMs = 60_000): Promise<SwapVerdict> {
    let verdict: SwapVerdict | undefined;
    await waitFor(
      async () => {
        const { rows } = await db.pool.query<{ verdict: SwapVerdict }>(
          'SELECT verdict FROM classifier_verdicts WHERE bid_id = $1',
          [bidId],
        );
        verdict = rows[0]?.verdict;
        return verdict !== undefined;
      },
      `a verdict for ${bidId}`,
      timeoutMs,
    );
    return verdict!;
  }

  async function pending(bidId: string): Promise<string | null> {
    const { rows } = await db.pool.query<{ status: string; waiting_for: string | null }>(
      'SELECT status, waiting_for FROM classifier_swaps WHERE bid_id = $1',
      [bidId],
    );
    return rows[0]?.status === 'pending' ? (rows[0].waiting_for ?? 'pending') : null;
  }

  /** Moves both chains to `at` (or past every window of `swap`) and mines so the clients report it. */
  async function moveTo(at: number): Promise<void> {
    for (const chain of [src(), dst()]) {
      const now = await chain.latestTimestamp();
      if (at > now) await chain.setNextBlockTimestamp(at);
      await chain.mine(1);
      await chain.mine(6);
    }
  }

  /** Mines both chains so that a chunk ends with a block at exactly `at` (the clock stops right there). */
  async function moveExactlyTo(at: number): Promise<void> {
    for (const chain of [src(), dst()]) {
      const next = (await chain.provider.getBlockNumber()) + 1;
      const blocks = 5 - ((next - 1) % 5) || 5; // up to the next multiple of 5
      await chain.setNextBlockTimestamp(at - (blocks - 1));
      await chain.mine(blocks);
    }
  }

  /** Waits until the classifier's clock of a chain reached `at` (every event up to it handled). */
  async function clockReached(chainId: string, at: number): Promise<void> {
    await waitFor(
      async () => {
        const { rows } = await db.pool.query<{ block_time: string }>(
          `SELECT block_time FROM classifier_clocks WHERE chain_id = $1 AND stream = 'swap'`,
          [chainId],
        );
        return Number(rows[0]?.block_time ?? -1) >= at;
      },
      `chain ${chainId} clock at ${at}`,
      60_000,
    );
  }

  const afterWindows = (s: LockedSwap) => s.times.T + 3 * E + 3 * Tol + 5;

  beforeAll(async () => {
    pipeline = await startPipeline();
    ({ db, did, ctx } = pipeline);
  }, 180_000);

  afterAll(async () => {
    await pipeline?.stop();
  });

  it('judges an honest swap normal, with its response time, once the LP confirmed in', async () => {
    const swap = await runSwap('honest', options());
    await moveTo(swap.times.T + 10);
    const verdict = await verdictOf(swap.bidId);
    expect(verdict).toMatchObject({ outcome: 'normal', case: null, responseTimeSeconds: 1, lpId: swap.lpId });
    expect(verdict.evidence).toMatchObject({ userConsent: true, lpConsent: true });
    expect(verdict.transactions.map((t) => t.step)).toEqual([
      'transferOut',
      'transferIn',
      'confirmOut',
      'confirmIn',
    ]);
    expect(verdict.transactions.map((t) => t.txHash)).toEqual(swap.steps.map((s) => s.txHash.toLowerCase()));
  }, 120_000);

  it('case 2: a short amount and a wrong receiver are the user’s, never case 3', async () => {
    const short = await runSwap('short_amount', options());
    const wrong = await runSwap('wrong_receiver', options());
    await moveTo(wrong.times.T + 10);
    const [a, b] = [await verdictOf(short.bidId), await verdictOf(wrong.bidId)];
    expect(a).toMatchObject({ case: 2, party: 'user', subject: short.out.sender.toLowerCase() });
    expect(a.rule).toMatch(/without LP consent/);
    expect(b).toMatchObject({ case: 2, party: 'user' });
    expect(b.rule).toMatch(/not an address of LP/);
  }, 120_000);

  it('case 4: a TransferIn with a wrong amount or a wrong hashlock', async () => {
    const amount = await lockSwap(options({ lpAnswer: 'wrong_amount' }));
    const hashlock = await lockSwap(options({ lpAnswer: 'wrong_hashlock' }));
    await moveTo(hashlock.times.T + 2 * E + 1);
    const [a, b] = [await verdictOf(amount.bidId), await verdictOf(hashlock.bidId)];
    expect(a).toMatchObject({ case: 4, party: 'lp', subject: amount.lpId });
    expect(a.rule).toMatch(/token amount/);
    expect(b).toMatchObject({ case: 4, party: 'lp' });
    expect(b.rule).toMatch(/hashlock/);
  }, 120_000);

  it('case 3 only once the destination chain passed T+2E', async () => {
    const swap = await lockSwap(options({ lpAnswer: 'none' }));
    const end = swap.times.T + 2 * E;
    await moveExactlyTo(end);
    await clockReached(DST.system, end);
    // The destination chain is at T+2E exactly: the LP could still have answered in that block.
    await waitFor(async () => /T\+2E/.test((await pending(swap.bidId)) ?? ''), 'the swap to wait for T+2E');
    expect(await pending(swap.bidId)).toMatch(/T\+2E/);
    await moveTo(end + 1);
    expect(await verdictOf(swap.bidId)).toMatchObject({
      case: 3,
      party: 'lp',
      blockTime: end,
      decidedOn: DST.system,
    });
  }, 120_000);

  it('case 3 at the LP’s lock bound T+2E: −1 and 0 answer in time, +1 is refused by the contract', async () => {
    const verdicts: Array<SwapVerdict['case']> = [];
    for (const offset of [-1, 0, 1]) {
      const swap = await lockSwap(options({ lpAnswer: 'none' }));
      const answered = await tryStep(swap, dst(), 'transferIn', 2, swap.times.T + 2 * E + offset);
      expect(answered.ok).toBe(offset <= 0);
      await moveTo(afterWindows(swap));
      verdicts.push((await verdictOf(swap.bidId)).case);
    }
    // Answered in time but never confirmed by the user: case 5, not 3.
    expect(verdicts).toEqual([5, 5, 3]);
  }, 180_000);

  it('case 1 at the user’s lock bound T+E: −1 and 0 lock in time, +1 is refused by the contract', async () => {
    const verdicts: Array<SwapVerdict['case']> = [];
    for (const offset of [-1, 0, 1]) {
      const swap = await lockSwap(options({ lock: false }));
      const locked = await tryStep(swap, src(), 'transferOut', 1, swap.times.T + E + offset);
      expect(locked.ok).toBe(offset <= 0);
      await fileComplaint(dst(), complaintFieldsOf(swap.agreement), { complainant: 2, domain: swap.lpId });
      await moveTo(afterWindows(swap));
      verdicts.push((await verdictOf(swap.bidId)).case);
    }
    // Locked in time but never answered by the LP: case 3, not 1.
    expect(verdicts).toEqual([3, 3, 1]);
  }, 180_000);

  it('case 5 at the user’s confirm bound T+3E: −1 and 0 are in time, +1 is refused by the contract', async () => {
    const verdicts: Array<SwapVerdict['case']> = [];
    for (const offset of [-1, 0, 1]) {
      const swap = await lockSwap(options());
      const end = swap.times.T + 3 * E;
      const confirmed = await tryStep(swap, src(), 'confirmOut', 1, end + offset);
      expect(confirmed.ok).toBe(offset <= 0);
      if (confirmed.ok) await tryStep(swap, dst(), 'confirmIn', 2, end + 1 + 1);
      await moveTo(afterWindows(swap));
      verdicts.push((await verdictOf(swap.bidId)).case);
    }
    expect(verdicts).toEqual([null, null, 5]);
  }, 180_000);

  it('case 6 at the LP’s confirm bound T+3E+Tol: −1 and 0 are in time, +1 is refused', async () => {
    const verdicts: Array<SwapVerdict['case']> = [];
    for (const offset of [-1, 0, 1]) {
      const swap = await lockSwap(options());
      await tryStep(swap, src(), 'confirmOut', 1, swap.times.T + 3);
      const end = swap.times.T + 3 * E + Tol;
      const confirmed = await tryStep(swap, dst(), 'confirmIn', 2, end + offset);
      expect(confirmed.ok).toBe(offset <= 0);
      await moveTo(afterWindows(swap));
      verdicts.push((await verdictOf(swap.bidId)).case);
    }
    expect(verdicts).toEqual([null, null, 6]);
  }, 180_000);

  it('case 7: the user confirms in without having confirmed out', async () => {
    const swap = await runSwap('confirm_in_without_confirm_out', options());
    await moveTo(afterWindows(swap));
    const verdict = await verdictOf(swap.bidId);
    expect(verdict).toMatchObject({ case: 7, party: 'user', subject: swap.out.sender.toLowerCase() });
  }, 120_000);

  /** An agreement the parties signed (and registered their DIDs for) but the user never locked. */
  async function unlockedAgreement() {
    const swap = await lockSwap(options({ lock: false }));
    return { T: swap.times.T, agreement: swap.agreement, fields: complaintFieldsOf(swap.agreement) };
  }

  it('case 1: a valid complaint by the LP and no TransferOut by T+E on the source chain', async () => {
    const { T, agreement, fields } = await unlockedAgreement();
    const filed = await fileComplaint(dst(), fields, { complainant: 2, domain: agreement.lpId });
    expect(filed.bidId).toBe(bidIdOf(agreement));
    await moveExactlyTo(T + E);
    await clockReached(SRC.system, T + E);
    // Seen, its DID names answered, and waiting for the source chain to pass T+E.
    await waitFor(
      async () => /T\+E/.test((await pending(filed.bidId)) ?? ''),
      'the complaint to wait for T+E',
    );
    await moveTo(T + E + 1);
    const verdict = await verdictOf(filed.bidId);
    expect(verdict).toMatchObject({ case: 1, party: 'user', subject: agreement.requestor.toLowerCase() });
    expect(verdict.complaint).toMatchObject({
      valid: true,
      complainantParty: 'lp',
      complainant: agreement.lpId,
    });
  }, 120_000);

  it('case 0: a complaint by someone who is neither the user nor the LP', async () => {
    const { T, fields } = await unlockedAgreement();
    const filed = await fileComplaint(dst(), fields, { complainant: 5, domain: 'stranger-5.devnet' });
    await moveTo(T + E + 1);
    // An invalid complaint alone decides its bid only once no TransferOut with it can still come.
    await waitFor(
      async () => /invalid complaint's fields are not the agreement/.test((await pending(filed.bidId)) ?? ''),
      'the invalid complaint to wait for a TransferOut',
    );
    await moveTo(T + E + 1 + INVALID_COMPLAINT_HOLD_SECONDS);
    const verdict = await verdictOf(filed.bidId);
    expect(verdict).toMatchObject({ outcome: 'invalid_complaint', case: 0, party: null });
    expect(verdict.complaint?.invalidReason).toMatch(/neither the user's nor the LP's/);
    const { rows } = await db.pool.query('SELECT 1 FROM classifier_violations WHERE bid_id = $1', [
      filed.bidId,
    ]);
    expect(rows).toHaveLength(0);
  }, 120_000);

  it('a look-alike swap on a foreign contract produces nothing', async () => {
    const compiled = await compileContracts();
    const foreign = await deployDevnetContracts(src().wallet(0), compiled, {
      fundAccounts: [],
      tokensPerAccount: 0n,
    });
    const foreignSrc: DevnetChain = { ...src(), contracts: foreign };
    const swap = await runSwap('honest', options({ src: foreignSrc }));
    await moveTo(afterWindows(swap));
    const honest = await runSwap('honest', options());
    await moveTo(honest.times.T + 10);
    await verdictOf(honest.bidId);
    const { rows } = await db.pool.query('SELECT 1 FROM classifier_swaps WHERE bid_id = $1', [swap.bidId]);
    expect(rows).toHaveLength(0);
  }, 120_000);

  it.each([
    { mode: 'one message at a time', schema: 'dup_test' },
    { mode: 'all in one batch', schema: 'dup_batch' },
  ])(
    'decides the same with the destination chain first and every message twice ($mode)',
    async ({ mode, schema }) => {
      // The live pipeline's input messages, replayed into a fresh engine in the worst order.
      const { rows } = await db.pool.query<{ topic: string; value: string }>(
        `SELECT topic, value FROM bus_messages WHERE topic IN ('chain.events', 'chain.heights') ORDER BY topic, partition, "offset"`,
      );
      const events = rows
        .filter((r) => r.topic === 'chain.events')
        .map((r) => decode(chainEvents, { value: r.value } as never));
      const heights = rows
        .filter((r) => r.topic === 'chain.heights')
        .map((r) => decode(chainHeights, { value: r.value } as never));
      const ofChain = (chainId: string) => ({
        events: events.filter((e) => (e.payload as ChainEvent).chainId === chainId),
        heights: heights.filter((h) => (h.payload as ChainHeight).chainId === chainId),
      });
      const tables = classifierTables(schema);
      await db.pool.query(`CREATE SCHEMA ${schema}; ${classifierDdl(tables)}`);
      // DID names as the live verdicts recorded them.
      const live = await db.pool.query<{ bid_id: string; verdict: SwapVerdict }>(
        'SELECT bid_id, verdict FROM classifier_verdicts',
      );
      const recorded = new Map(live.rows.map((r) => [r.bid_id, r.verdict.evidence.didNames]));
      const engine = new ClassifierEngine({
        pool: db.pool,
        tables,
        group: schema,
        chains: watchedChains(ctx.config.chainClients!),
        did: {
          names: (address, bid) => recorded.get(bid)?.[address.toLowerCase()] ?? [],
          request: () => undefined,
          stop: () => undefined,
        },
        log: ctx.log,
      });
      const context = {
        attempt: 1,
        lastAttempt: false,
        signal: new AbortController().signal,
        commitIn: async () => undefined,
      };
      const inputs: ClassifierInput[] = [];
      for (const chainId of [DST.system, SRC.system]) {
        const { events: e, heights: h } = ofChain(chainId);
        for (const m of [...e, ...e])
          inputs.push({ kind: 'event', id: m.id, event: m.payload as ChainEvent });
        for (const m of [...h, ...h])
          inputs.push({ kind: 'height', id: m.id, height: m.payload as ChainHeight });
      }
      if (mode === 'all in one batch') await engine.handleBatch(inputs, context);
      else for (const input of inputs) await engine.handleBatch([input], context);
      const replayed = await db.pool.query<{ bid_id: string; verdict: SwapVerdict }>(
        `SELECT bid_id, verdict FROM ${schema}.classifier_verdicts`,
      );
      const byBid = new Map(replayed.rows.map((r) => [r.bid_id, r.verdict]));
      for (const { bid_id, verdict } of live.rows) expect(byBid.get(bid_id)).toEqual(verdict);
      expect(replayed.rows.length).toBe(live.rows.length);
    },
    120_000,
  );

  it('sends a malformed or unknown event to the dead-letter topic with the reason; it holds its chain until released', async () => {
    const good = JSON.parse(
      (
        await db.pool.query<{ value: string }>(
          `SELECT value FROM bus_messages WHERE topic = 'chain.events' ORDER BY "offset" LIMIT 1`,
        )
      ).rows[0]!.value,
    );
    // Not poison: a real swap (its fields hash to its bid) with U+0000 in its lpId, which PostgreSQL text and
    // jsonb refuse. It is judged (stored losslessly: jsonb-nul.ts), never dead-lettered.
    const lock = JSON.parse(
      (
        await db.pool.query<{ value: string }>(
          `SELECT value FROM bus_messages WHERE topic = 'chain.events' AND headers->>'kind' = 'TransferOut'
            ORDER BY "offset" LIMIT 1`,
        )
      ).rows[0]!.value,
    );
    const nul = { ...lock.payload, lpId: 'lp\u0000x', transferId: '0x' + 'ab'.repeat(32) };
    nul.bidId = bidIdOfAgreement(agreementOfTransferOut(nul));
    const poison = [
      { ...good, id: 'poison:1', payload: { ...good.payload, kind: 'TransferSideways' } },
      { ...good, id: 'poison:2', payload: { ...good.payload, blockTimestamp: 'yesterday' } },
      { ...lock, id: 'nul:1', payload: nul },
    ];
    await ctx.bus.publish(
      chainEvents.name,
      poison.map((p) => ({ key: SRC.system, value: JSON.stringify(p) })),
    );
    await waitFor(
      async () =>
        (await db.pool.query(`SELECT 1 FROM bus_messages WHERE topic = 'chain.events.dlq'`)).rowCount === 2,
      'two dead letters',
    );
    const { rows } = await db.pool.query<{ headers: Record<string, string> }>(
      `SELECT headers FROM bus_messages WHERE topic = 'chain.events.dlq' ORDER BY "offset"`,
    );
    expect(rows[0]!.headers['x-dlq-error']).toMatch(/invalid payload/);
    expect(rows[1]!.headers['x-dlq-error']).toMatch(/blockTimestamp/);
    // The chain's partition keeps flowing (the next swap's events are applied), but its clock holds: the two
    // events never applied, and a version this build cannot read may be one a swap needs (dead-lettered.ts).
    const swap = await runSwap('honest', options());
    await moveTo(swap.times.T + 10);
    await waitFor(async () => (await pending(swap.bidId)) !== null, 'the next swap seen');
    const tables = classifierTables();
    const held = await listMissingEvents(db.pool, tables);
    expect(new Set(held.map((m) => [m.chainId, m.eventId, m.block].join(' ')))).toEqual(
      new Set([`${SRC.system} poison:1 0`, `${SRC.system} poison:2 0`]),
    );
    await moveTo(swap.times.T + 20);
    expect(await pending(swap.bidId)).not.toBeNull();
    // The operator gives up on them (npm run classifier-holds -- release <id>): the clock passes them.
    for (const id of ['poison:1', 'poison:2'])
      expect(await releaseMissingEvent(db.pool, tables, id)).toBeGreaterThan(0);
    await moveTo(swap.times.T + 30);
    expect((await verdictOf(swap.bidId)).outcome).toBe('normal');
    expect(await verdictOf(nul.bidId)).toMatchObject({ outcome: 'violation', case: 2, party: 'user' });
    expect(
      (await db.pool.query(`SELECT 1 FROM bus_messages WHERE topic = 'chain.events.dlq'`)).rowCount,
    ).toBe(2);
  }, 120_000);

  it('replays chain.events and chain.heights into fresh tables with identical verdicts and violations', async () => {
    const report = await replay();
    expect(report.verdicts.live).toBeGreaterThanOrEqual(15);
    expect(report.verdicts).toMatchObject({ identical: true, different: [], onlyLive: [], onlyReplay: [] });
    expect(report.violations.identical).toBe(true);
    // 2 + 2 (cases 2, 4), one each of 1, 3, 5, 6, 7, three from each lock-bound test, and the case 2 of the
    // swap with U+0000 in its lpId (the dead-letter test).
    expect(report.violations.live).toBe(16);
    expect(report.identical).toBe(true);
    // Compared where the live classifier was (replay-cut.ts).
    expect(report.exactCut).toBe(true);
    // The live run's saved signers, every one of them loaded (the memo's bound is far off).
    const saved = Number(
      (await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM classifier_signers')).rows[0]!.n,
    );
    expect(saved).toBeGreaterThan(0);
    expect(report.signerMemo).toEqual({ saved, kept: saved });
    // The two malformed events the live classifier dead-lettered are passed over, not dead-lettered again:
    // `npm run dead-letters` would count and re-send a second copy of each. Released live, they hold nothing
    // in the replay either (else its source chain's swaps would stay pending there).
    expect(report.malformed).toBe(2);
    expect(
      (await db.pool.query(`SELECT 1 FROM bus_messages WHERE topic = 'chain.events.dlq'`)).rowCount,
    ).toBe(2);
    // Where the time went, phase by phase, in order; together they are the whole replay.
    expect(Object.keys(report.phases)).toEqual([
      'tables',
      'names',
      'signers',
      'setup',
      'consume',
      'write',
      'compare',
      'cleanup',
    ]);
    const spent = Object.values(report.phases).reduce((a, b) => a + b, 0);
    expect(spent).toBeGreaterThan(0);
    expect(Math.abs(spent - report.seconds)).toBeLessThan(0.05);
  }, 120_000);

  it('a replay whose saved signer memo passes the bound keeps what fits, and decides the same', async () => {
    try {
      const report = await replay({ signerMemoEntries: 2 });
      expect(report.signerMemo.saved).toBeGreaterThan(2);
      expect(report.signerMemo.kept).toBe(2);
      expect(report.identical).toBe(true);
    } finally {
      // One memo a process: the live classifier of this pipeline shares it.
      boundSignerMemo(DEFAULT_SIGNER_MEMO_ENTRIES);
    }
  }, 120_000);

  it('a replay that fails drops the schema it made (its tables may be gigabytes)', async () => {
    const schemas = async () =>
      (
        await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_namespace WHERE nspname LIKE 'classifier_replay_%'`,
        )
      ).rows[0]!.n;
    const before = await schemas();
    // Its first read fails.
    await expect(replay({ live: classifierTables('no_such_schema') })).rejects.toThrow(/no_such_schema/);
    expect(await schemas()).toBe(before);
  }, 60_000);
});
