/**
 * Points end to end on the devnet, behind the chain clients, the Connector and the Classifier: swaps change
 * exactly the scores they should, and every deduction record leads back to the swap's own transactions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPoints } from '../../services/points/index.js';
import { INVALID_COMPLAINT_HOLD_SECONDS } from '../../services/classifier/judge.js';
import { pointsMigrations } from '../../services/points/migrations.js';
import { pointTestConfig } from '../../services/points/test-harness.js';
import {
  startRelayAdminStandIn,
  type RelayAdminStandIn,
} from '../../services/stand-ins/relay-admin/server.js';
import {
  lockSwap,
  runSwap,
  tryStep,
  type LockedSwap,
  type ScenarioOptions,
} from '../../shared/devnet/swap-scenarios.js';
import { complaintFieldsOf, fileComplaint } from '../../shared/devnet/complaints.js';
import { DST, E, SRC, Tol, startPipeline, type Pipeline } from '../support/pipeline.js';
import { productionSkipReason, type Profile } from '../support/service-context.js';
import { announceSkip } from '../support/external.js';
import { waitFor } from '../support/wait.js';

const skipProduction = productionSkipReason();
if (skipProduction) announceSkip('points end to end on the production profile', skipProduction);

/**
 * The whole reputation pipeline on the devnet (our chain clients, the Connector, the Classifier, Points), on
 * both profiles: the postgres log with the JSONB archive, and Kafka with FerretDB (PostgreSQL keeping effects,
 * positions and scores). The same swaps must give the same verdicts, deductions and scores on both.
 */
describe.each([
  { profile: 'embedded' as Profile, skip: undefined },
  { profile: 'production' as Profile, skip: skipProduction },
])('points end to end on the devnet, with the classifier ($profile profile)', ({ profile, skip }) => {
  if (skip) {
    it.skip(`SKIPPED: ${skip}`, () => undefined);
    return;
  }
  let pipeline: Pipeline;
  let ctx: Pipeline['ctx'];
  let relayAdmin: RelayAdminStandIn;
  let points: Awaited<ReturnType<typeof startPoints>>;
  const src = () => pipeline.src();
  const dst = () => pipeline.dst();
  const options = (extra: Partial<ScenarioOptions> = {}) => pipeline.options(extra);

  async function moveTo(at: number): Promise<void> {
    for (const chain of [src(), dst()]) {
      const now = await chain.latestTimestamp();
      if (at > now) await chain.setNextBlockTimestamp(at);
      await chain.mine(7);
    }
  }
  /** Points answers as of the chains' newest block time (devnet time runs ahead of the wall clock). */
  const chainsNow = async () => Math.max(await src().latestTimestamp(), await dst().latestTimestamp());
  const get = async (path: string) => {
    const at = await chainsNow();
    const response = await fetch(
      `http://127.0.0.1:${points.port}${path}${path.includes('?') ? '&' : '?'}at=${at}`,
    );
    expect(response.status).toBe(200);
    return (await response.json()) as Record<string, any>;
  };

  beforeAll(async () => {
    pipeline = await startPipeline({ extraMigrations: [pointsMigrations], profile });
    ctx = pipeline.ctx;
    relayAdmin = await startRelayAdminStandIn();
    points = await startPoints(
      ctx,
      pointTestConfig({ relayAdminUrl: relayAdmin.url, didSupportUrl: pipeline.did.url }),
    );
  }, 180_000);

  afterAll(async () => {
    await points?.stop();
    await relayAdmin?.close();
    await pipeline?.stop();
  });

  it('an honest swap counts as a normal swap of its LP and deducts nothing', async () => {
    const swap = await runSwap('honest', options());
    await moveTo(swap.times.T + 10);
    const user = swap.out.sender.toLowerCase();
    await waitFor(
      async () => (await get(`/lp-point?lp_id=${swap.lpId}`)).statistics.normal_swaps === 1,
      'the normal swap',
      90_000,
    );
    expect((await get(`/lp-point?lp_id=${swap.lpId}`)).statistics).toMatchObject({
      decided_swaps: 1,
      normal_swaps: 1,
    });
    expect(await get(`/user-point?address=${user}`)).toMatchObject({
      score_tenths: 20,
      deductions: { violations: 0 },
    });
    // The raw chain-client bodies are in this profile's archive (JSONB table, or FerretDB).
    expect([ctx.bus.kind, ctx.archive.kind]).toEqual(
      profile === 'production' ? ['kafka', 'mongodb'] : ['postgres', 'postgres'],
    );
    expect(await ctx.archive.count('chain-events')).toBeGreaterThanOrEqual(swap.steps.length);
  }, 180_000);

  it('case 2 deducts 0.1 from the user, and its record names the swap and its transactions', async () => {
    const swap = await runSwap('short_amount', options());
    await moveTo(swap.times.T + 10);
    const user = swap.out.sender.toLowerCase();
    await waitFor(
      async () => (await get(`/user-deduction-records?address=${user}`)).records.length === 1,
      'the user deduction',
      90_000,
    );
    const [record] = (await get(`/user-deduction-records?address=${user}`)).records;
    expect(record).toMatchObject({
      bid: swap.bidId.toLowerCase(),
      case: 2,
      party: 'user',
      tenths: 1,
      counts: true,
    });
    const transferOut = swap.steps.find((s) => s.step === 'transferOut')!;
    expect(record.transactions).toContainEqual(
      expect.objectContaining({
        step: 'transferOut',
        chain_id: SRC.system,
        tx_hash: transferOut.txHash.toLowerCase(),
        block_time: transferOut.timestamp,
      }),
    );
    expect(await get(`/user-point?address=${user}`)).toMatchObject({ score: '1.9', score_tenths: 19 });
    // The LP's figures do not move for a swap the user broke.
    expect((await get(`/lp-point?lp_id=${swap.lpId}`)).statistics.decided_swaps).toBe(1);
  }, 180_000);

  it('case 3 deducts 0.1 from the LP and counts against its success rate; the user is untouched', async () => {
    const swap = await lockSwap(options({ lpAnswer: 'none' }));
    await moveTo(swap.times.T + 3 * E + 3 * Tol + 5);
    await waitFor(
      async () => (await get(`/lp-deduction-records?lp_id=${swap.lpId}`)).records.length === 1,
      'the LP deduction',
      90_000,
    );
    const [record] = (await get(`/lp-deduction-records?lp_id=${swap.lpId}`)).records;
    expect(record).toMatchObject({
      bid: swap.bidId.toLowerCase(),
      case: 3,
      party: 'lp',
      decided_on_chain: DST.system,
    });
    const transferOut = swap.steps.find((s) => s.step === 'transferOut')!;
    expect(record.transactions.map((t: any) => t.tx_hash)).toContain(transferOut.txHash.toLowerCase());
    const lp = await get(`/lp-point?lp_id=${swap.lpId}`);
    expect(lp).toMatchObject({
      statistics: { decided_swaps: 2, normal_swaps: 1, success_rate_percent: '50.0' },
      deductions: { violations: 1 },
      basis: { tenths: 0 },
      score_tenths: 0,
      floored_at_zero: true,
    });
    expect((await get(`/user-point?address=${swap.out.sender.toLowerCase()}`)).score_tenths).toBe(19);
  }, 180_000);

  it('cases 4, 5 and 7 each deduct exactly once, from the party that broke the swap', async () => {
    const scenarios = [
      {
        expected: 4,
        party: 'lp',
        swap: await lockSwap(options({ lpAnswer: 'wrong_amount', parties: { user: 5, lp: 6 } })),
      },
      { expected: 5, party: 'user', swap: await lockSwap(options({ parties: { user: 7, lp: 8 } })) },
      {
        expected: 7,
        party: 'user',
        swap: await runSwap('confirm_in_without_confirm_out', options({ parties: { user: 9, lp: 10 } })),
      },
    ] as const;
    await moveTo(Math.max(...scenarios.map(({ swap }) => swap.times.T)) + 3 * E + 3 * Tol + 5);
    for (const { expected, party, swap } of scenarios) {
      const user = swap.out.sender.toLowerCase();
      const records = (subject: 'user' | 'lp') =>
        subject === 'user'
          ? get(`/user-deduction-records?address=${user}`)
          : get(`/lp-deduction-records?lp_id=${swap.lpId}`);
      await waitFor(
        async () => (await records(party)).records.length === 1,
        `the case ${expected} deduction`,
        90_000,
      );
      expect((await records(party)).records.map((r: any) => [r.bid, r.case])).toEqual([
        [swap.bidId.toLowerCase(), expected],
      ]);
      expect((await records(party === 'user' ? 'lp' : 'user')).records).toEqual([]);
      expect((await get(`/user-point?address=${user}`)).score_tenths).toBe(party === 'user' ? 19 : 20);
      expect((await get(`/lp-point?lp_id=${swap.lpId}`)).deductions.violations).toBe(party === 'lp' ? 1 : 0);
    }
  }, 240_000);

  /** Files the agreement of a swap nobody locked, as `complainant` with `domain`. */
  async function complain(swap: LockedSwap, complainant: number, domain: string) {
    return fileComplaint(dst(), complaintFieldsOf(swap.agreement), { complainant, domain });
  }

  it('case 6 deducts from the LP; a valid complaint (case 1) from the user; an invalid one (case 0) from nobody', async () => {
    const late = await lockSwap(options({ parties: { user: 11, lp: 12 } }));
    expect((await tryStep(late, src(), 'confirmOut', 11, late.times.T + 3)).ok).toBe(true);
    const unlocked = await lockSwap(options({ lock: false, parties: { user: 13, lp: 14 } }));
    await complain(unlocked, 14, unlocked.lpId);
    const bogus = await lockSwap(options({ lock: false, parties: { user: 15, lp: 16 } }));
    await complain(bogus, 17, 'stranger-17.devnet');
    // Pending first: the complaint is shown with what it waits for, once the chain client, the Connector and
    // the bus have carried it to Points (404 until then: on Kafka, through the outbox, that takes a moment).
    const known = async (bid: string) =>
      (await fetch(`http://127.0.0.1:${points.port}/complaint?bid=${bid}&at=${await chainsNow()}`)).status !==
      404;
    await waitFor(() => known(unlocked.bidId), 'the complaint to reach Points', 90_000);
    const pending = await get(`/complaint?bid=${unlocked.bidId}`);
    expect(pending.status).toBe('pending');
    expect(pending.complaints_on_chain).toHaveLength(1);

    await moveTo(Math.max(late.times.T, unlocked.times.T, bogus.times.T) + 3 * E + 3 * Tol + 5);
    await waitFor(
      async () => (await get(`/lp-deduction-records?lp_id=${late.lpId}`)).records.length === 1,
      'the case 6 deduction',
      90_000,
    );
    expect((await get(`/lp-deduction-records?lp_id=${late.lpId}`)).records[0].case).toBe(6);
    expect((await get(`/user-point?address=${late.out.sender.toLowerCase()}`)).score_tenths).toBe(20);

    const user = unlocked.out.sender.toLowerCase();
    await waitFor(
      async () => (await get(`/complaint?bid=${unlocked.bidId}`)).status === 'decided',
      'the case 1 verdict',
      90_000,
    );
    const decided = await get(`/complaint?bid=${unlocked.bidId}`);
    expect(decided.verdict).toMatchObject({ case: 1, party: 'user', subject: user });
    expect(decided.complaint).toMatchObject({ valid: true, complainantParty: 'lp' });
    await waitFor(
      async () => (await get(`/user-deduction-records?address=${user}`)).records.length === 1,
      'the case 1 deduction',
    );
    expect((await get(`/user-point?address=${user}`)).score_tenths).toBe(19);
    expect((await get(`/lp-point?lp_id=${unlocked.lpId}`)).deductions.violations).toBe(0);

    // An invalid complaint alone decides its bid once no TransferOut with it can still come.
    expect((await get(`/complaint?bid=${bogus.bidId}`)).status).toBe('pending');
    await moveTo(
      Math.max(late.times.T, unlocked.times.T, bogus.times.T) + 3 * E + INVALID_COMPLAINT_HOLD_SECONDS,
    );
    await waitFor(
      async () => (await get(`/complaint?bid=${bogus.bidId}`)).status === 'decided',
      'the case 0 verdict',
      90_000,
    );
    expect((await get(`/complaint?bid=${bogus.bidId}`)).verdict).toMatchObject({
      outcome: 'invalid_complaint',
      case: 0,
    });
    expect((await get(`/user-point?address=${bogus.out.sender.toLowerCase()}`)).score_tenths).toBe(20);
    expect((await get(`/lp-point?lp_id=${bogus.lpId}`)).deductions.violations).toBe(0);
  }, 240_000);
});
