/**
 * A TransferOut is the swap of the bid it names only when its own fields hash to that bid (spec §5): anyone
 * can call `transferOut` with any bidId. An audit found that the first TransferOut to arrive was the swap, so
 * a puppet lock (the LP's, or the user's, from a throwaway address, for 1 wei, on any chain) that arrived
 * first took the verdict (case 2, on the puppet) and the real swap was never judged: the LP escaped cases
 * 3 / 6, or the user 5 / 7, and a live run and its replay could differ with the partitions' interleaving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bidIdOfAgreement, transferOutBid, uniform } from '../../shared/otmoic/agreement.js';
import { databaseForSuite } from '../../test/support/database.js';
import { chainEventId, type ChainEvent, type SwapVerdict } from '../../topics/index.js';
import type { ClassifierInput } from './engine.js';
import { executesItsBid, type SwapFacts, type TransferOut } from './facts.js';
import { judge } from './judge.js';
import { classifierMigrations } from './migrations.js';
import { model } from './reference-model.js';
import {
  DST,
  SRC,
  STRANGER,
  USER,
  buildTimeline,
  type Timeline,
  type TimelineSpec,
} from './swap-timeline.js';
import {
  batchContext,
  envAt,
  factsOf,
  finalHeights,
  HONEST_SWAP,
  syntheticEngine,
} from './judge-test-kit.js';

const LATE = envAt({ [SRC.chainId]: 2000, [DST.chainId]: 2000 });
const decided = (facts: SwapFacts, env = LATE): SwapVerdict => {
  const j = judge(facts, env);
  if (j.status !== 'decided') throw new Error(`pending: ${j.reason}`);
  return j.verdict;
};
const essentials = (v: SwapVerdict) => ({
  outcome: v.outcome,
  case: v.case,
  party: v.party,
  subject: v.subject,
  blockTime: v.blockTime,
});

const honest = HONEST_SWAP;

const all = (t: Timeline): ChainEvent[] => [
  ...t.streams[SRC.chainId]!,
  ...t.streams[DST.chainId]!,
  ...t.streams.reputation!,
];
const transferOuts = (t: Timeline) =>
  all(t).filter((e): e is TransferOut => e.kind === 'TransferOut' && e.sender === USER.address);
const puppetOf = (t: Timeline) =>
  all(t).find((e): e is TransferOut => e.kind === 'TransferOut' && e.sender === STRANGER.address)!;

/** The auditor's puppet: the genuine lock's bid and terms, a throwaway sender, any chain, any position. */
function handMadePuppet(genuine: TransferOut, chainId: string, blockNumber: number): TransferOut {
  return {
    ...genuine,
    chainId,
    blockNumber,
    txHash: '0x' + 'ab'.repeat(32),
    sender: STRANGER.address,
    txFrom: STRANGER.address,
    amount: '1',
    transferId: '0x' + 'cd'.repeat(32),
  };
}

describe('a TransferOut is the swap of its bid only when its fields hash to that bid', () => {
  it('the fixtures’ locks hash to their bid; a puppet’s fields do not', () => {
    for (const kind of ['ok', 'short_amount', 'wrong_receiver'] as const) {
      const t = buildTimeline({ ...honest, out: { kind, at: 1000 }, puppetOut: { at: 1000, chain: 'src' } });
      const [out] = transferOuts(t);
      expect(out!.bidId).toBe(t.bidId);
      expect(transferOutBid(out!)).toEqual({ executes: true });
      expect(executesItsBid(puppetOf(t))).toMatchObject({ executes: false });
    }
    const dstPuppet = puppetOf(buildTimeline({ ...honest, puppetOut: { at: 1000, chain: 'dst' } }));
    expect(dstPuppet.chainId).toBe(DST.chainId);
    expect(transferOutBid(dstPuppet)).toMatchObject({ executes: false, reason: /not to its bid/ });
  });

  it('accepts the bid of the agreement with lower-case token addresses, as the signatures are', () => {
    const token = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
    const [out] = transferOuts(buildTimeline(honest));
    const withToken = { ...out!, token };
    const agreementBid = (rendering: 'checksum' | 'lower') =>
      bidIdOfAgreement(
        {
          srcChainId: BigInt(SRC.chainId),
          srcAddress: USER.address,
          srcToken: token,
          srcAmount: out!.amount,
          dstChainId: BigInt(DST.chainId),
          dstAddress: USER.address,
          dstToken: '0x0000000000000000000000000000000000000000',
          dstAmount: out!.amountDst,
          dstNativeAmount: out!.nativeAmountDst,
          requestor: out!.requestor,
          lpId: out!.lpId,
          agreementReachedTime: BigInt(out!.agreementReachedTime),
          expectedSingleStepTime: BigInt(out!.expectedSingleStepTime),
          tolerantSingleStepTime: BigInt(out!.tolerantSingleStepTime),
          earliestRefundTime: BigInt(out!.earliestRefundTime),
          userSign: out!.userSign,
          lpSign: out!.lpSign,
        },
        uniform(rendering),
      );
    expect(agreementBid('checksum')).not.toBe(agreementBid('lower'));
    for (const rendering of ['checksum', 'lower'] as const)
      expect(transferOutBid({ ...withToken, bidId: agreementBid(rendering) })).toEqual({ executes: true });
    expect(transferOutBid({ ...withToken, bidId: out!.bidId })).toMatchObject({ executes: false });
  });

  it('a TransferOut whose terms cannot be read as an agreement is not the swap', () => {
    const [out] = transferOuts(buildTimeline(honest));
    const unreadable = { ...out!, dstAddress: (1n << 160n).toString() };
    expect(transferOutBid(unreadable)).toMatchObject({ executes: false, reason: /dstAddress/ });
    expect(factsOf(out!.bidId, [unreadable]).out).toBeNull();
  });
});

describe('a puppet TransferOut with the bid never becomes the swap, whatever the arrival order', () => {
  it('F1 (audit): the genuine swap is judged the same with the puppet first or last, on either chain', () => {
    const t = buildTimeline(honest);
    const [genuine] = transferOuts(t);
    const rest = all(t).filter((e) => e !== genuine);
    expect(model(honest).outcome).toBe('normal');
    for (const puppet of [
      handMadePuppet(genuine!, DST.chainId, 999),
      // On the source chain, one block before the genuine lock: first in chain order, too.
      handMadePuppet(genuine!, SRC.chainId, 0),
    ]) {
      const first = factsOf(t.bidId, [puppet, genuine!, ...rest]);
      const last = factsOf(t.bidId, [genuine!, puppet, ...rest]);
      expect(first.out).toBe(genuine);
      expect(last.out).toBe(genuine);
      expect(decided(first)).toEqual(decided(last));
      expect(essentials(decided(first))).toEqual(model(honest));
      // Before the genuine lock arrives, the puppet makes no swap at all.
      expect(factsOf(t.bidId, [puppet]).out).toBeNull();
    }
  });

  it.each([
    [
      'the LP escaping case 3',
      { in: { kind: 'none' as const }, confirmOut: undefined, confirmIn: undefined },
    ],
    ['the LP escaping case 6', { confirmIn: undefined }],
    ['the user escaping case 5', { confirmOut: undefined, confirmIn: undefined }],
    // In the non-LP window (from T+3E+Tol = 1011): before it only the LP's call can confirm in.
    ['the user escaping case 7', { confirmOut: undefined, confirmIn: { by: 'user' as const, at: 1012 } }],
  ])('%s: the puppet first changes nothing', (_, change) => {
    const spec: TimelineSpec = { ...honest, ...change, puppetOut: { at: 1000, chain: 'dst' } };
    const t = buildTimeline(spec);
    const puppet = puppetOf(t);
    const others = all(t).filter((e) => e !== puppet);
    const first = decided(factsOf(t.bidId, [puppet, ...others]));
    expect(decided(factsOf(t.bidId, [...others, puppet]))).toEqual(first);
    expect(essentials(first)).toEqual(model(spec));
    expect(first.case).not.toBe(2);
    expect(first.transferOutId).toBe(transferOuts(t)[0]!.transferId);
  });
});

describe('the same agreement locked twice: the first lock in chain order is the swap', () => {
  // The user locks again at T+1 with another hashlock, and confirms only that second lock out: the swap is
  // the first lock, which nobody confirmed out (case 5), whichever lock arrives first.
  const spec: TimelineSpec = {
    ...honest,
    confirmOut: undefined,
    confirmIn: undefined,
    copyOut: { at: 1001 },
  };
  const t = buildTimeline(spec);
  const [first, second] = transferOuts(t);
  const confirmSecond: ChainEvent = {
    kind: 'ConfirmOut',
    chainId: SRC.chainId,
    contract: first!.contract,
    blockNumber: 900,
    blockTimestamp: 1002,
    txHash: '0x' + 'ee'.repeat(32),
    logIndex: 0,
    txFrom: USER.address,
    transferId: second!.transferId,
    preimage: '0x' + '01'.repeat(32),
  };
  const others = all(t).filter((e) => e !== first && e !== second);

  it('both locks hash to the bid; the earlier one is the swap in either arrival order', () => {
    expect(second!.bidId).toBe(first!.bidId);
    expect(executesItsBid(second!)).toEqual({ executes: true });
    const inOrder = factsOf(t.bidId, [first!, second!, confirmSecond, ...others]);
    // The later lock arrives first and gathers its ConfirmOut; the earlier one then displaces it.
    const reversed = factsOf(t.bidId, [second!, confirmSecond, ...others, first!]);
    expect(inOrder.out).toBe(first);
    expect(reversed.out).toBe(first);
    expect(decided(reversed)).toEqual(decided(inOrder));
    expect(essentials(decided(reversed))).toEqual(model(spec));
    expect(model(spec).case).toBe(5);
    expect(decided(reversed).transactions.map((x) => x.txHash)).not.toContain(confirmSecond.txHash);
  });
});

describe('the engine, live and resident (replay), over the puppet and the copy in either order', () => {
  const db = databaseForSuite([classifierMigrations]);

  const specs: TimelineSpec[] = [
    { ...honest, id: 1, puppetOut: { at: 1000, chain: 'dst' } },
    {
      ...honest,
      id: 2,
      in: { kind: 'none' },
      confirmOut: undefined,
      confirmIn: undefined,
      puppetOut: { at: 1000, chain: 'src' },
    },
    { ...honest, id: 3, confirmOut: undefined, confirmIn: undefined, puppetOut: { at: 1000, chain: 'dst' } },
    { ...honest, id: 4, copyOut: { at: 1001 } },
  ];
  const timelines = specs.map((s) => buildTimeline(s));
  const event = (e: ChainEvent): ClassifierInput => ({ kind: 'event', id: chainEventId(e), event: e });
  const heights = finalHeights(2000);
  const notOut = (e: ChainEvent) => e.kind !== 'TransferOut';
  // Puppets and copies first, then everything else, the genuine locks last (destination chain first).
  const strangersFirst = timelines.flatMap((t) => [
    ...all(t).filter((e) => e.kind === 'TransferOut' && e !== transferOuts(t)[0]),
    ...all(t).filter(notOut),
    transferOuts(t)[0]!,
  ]);
  // Block order per chain, the source chain first.
  const blockOrder = timelines.flatMap((t) => [
    ...t.streams[SRC.chainId]!,
    ...t.streams[DST.chainId]!,
    ...t.streams.reputation!,
  ]);

  async function run(name: string, events: ChainEvent[], resident: boolean) {
    const { engine, tables } = await syntheticEngine(db.pool, name, resident ? 'keep' : undefined);
    const context = batchContext();
    for (const input of [...events.map(event), ...heights]) await engine.handleBatch([input], context);
    await engine.writeResident();
    const verdicts = await db.pool.query<{ bid_id: string; verdict: SwapVerdict }>(
      `SELECT bid_id, verdict FROM ${tables.verdicts} ORDER BY bid_id`,
    );
    const ignored = await db.pool.query<{ transfer_id: string; reason: string }>(
      `SELECT transfer_id, reason FROM ${tables.ignoredOuts} ORDER BY transfer_id`,
    );
    return { verdicts: verdicts.rows, ignored: ignored.rows };
  }

  it('gives every genuine swap the model’s verdict, records the others, and a replay equals the live run', async () => {
    const runs = [
      await run('hijack_live_block', blockOrder, false),
      await run('hijack_live_strangers', strangersFirst, false),
      await run('hijack_resident_block', blockOrder, true),
      await run('hijack_resident_strangers', strangersFirst, true),
    ];
    const want = timelines
      .map((t, i) => ({ bid: t.bidId, ...model(specs[i]!), transferOutId: transferOuts(t)[0]!.transferId }))
      .sort((a, b) => (a.bid < b.bid ? -1 : 1));
    expect(
      runs[0]!.verdicts.map(({ bid_id, verdict: v }) => ({
        bid: bid_id,
        ...essentials(v),
        transferOutId: v.transferOutId,
      })),
    ).toEqual(want);
    for (const r of runs.slice(1)) expect(r.verdicts).toEqual(runs[0]!.verdicts);
    const ignored = timelines
      .flatMap((t) =>
        all(t)
          .filter((e): e is TransferOut => e.kind === 'TransferOut' && e !== transferOuts(t)[0])
          .map((e) => ({
            transfer_id: e.transferId,
            reason: e.sender === STRANGER.address ? 'foreign' : 'copy',
          })),
      )
      .sort((a, b) => (a.transfer_id < b.transfer_id ? -1 : 1));
    expect(ignored.filter((r) => r.reason === 'foreign')).toHaveLength(3);
    for (const r of runs) expect(r.ignored).toEqual(ignored);
  }, 120_000);
});
