/**
 * Anyone can call transferIn naming any transfer, as often as they like. The facts kept every one, so each new
 * TransferIn made the judgement scan all the earlier ones (and a live batch read and write them all): 4,000
 * griefing TransferIns of one sender cost 1.4 s of judging, 2,000 through the live engine 80 s. The facts now
 * keep only the TransferIns that can still matter (facts.ts withTransferIn); these tests hold that they decide
 * exactly as all of them did, and that the work per griefing TransferIn no longer grows with their number
 * (counted, not timed: a loaded machine's timings say nothing).
 */
import fc from 'fast-check';
import { keccak256, toUtf8Bytes } from 'ethers';
import { describe, expect, it } from 'vitest';
import { databaseForSuite } from '../../test/support/database.js';
import { chainEventId, type ChainEvent, type SwapVerdict } from '../../topics/index.js';
import type { ClassifierInput } from './engine.js';
import {
  addFact,
  byChainPosition,
  emptyFacts,
  type JudgeEnv,
  type SwapFacts,
  type TransferIn,
  type TransferOut,
} from './facts.js';
import { judge } from './judge.js';
import { batchContext, finalHeights, HONEST_SWAP, syntheticEngine } from './judge-test-kit.js';
import { classifierMigrations } from './migrations.js';
import {
  DID_NAMES,
  DST,
  LP,
  LP_ID,
  RELAY,
  SRC,
  STRANGER,
  USER,
  buildTimeline,
  type TimelineSpec,
} from './swap-timeline.js';

/** Another wallet of the LP (its DID names include the LP's id), and one the DID support has no answer for. */
const HOT_WALLET = '0x00000000000000000000000000000000000a11ce';
const SILENT = '0x0000000000000000000000000000000000005117';
const NAMES: Record<string, readonly string[]> = { ...DID_NAMES, [HOT_WALLET]: [LP_ID] };

const hex = (seed: string) => keccak256(toUtf8Bytes(seed));

/** The facts as they were kept before: every TransferIn, in canonical order, duplicates aside. */
function keepingAll(facts: SwapFacts, event: ChainEvent): SwapFacts {
  if (event.kind !== 'TransferIn') return addFact(facts, event);
  const same = (e: TransferIn) =>
    e.chainId === event.chainId && e.txHash === event.txHash && e.logIndex === event.logIndex;
  return facts.ins.some(same) ? facts : { ...facts, ins: [...facts.ins, event].sort(byChainPosition) };
}

// The swap (T 1000, E 3, Tol 2), the user's second lock of its agreement, and the LP's answer as a template.
const spec: TimelineSpec = {
  ...HONEST_SWAP,
  in: { kind: 'ok', at: 1_002 },
  copyOut: { at: 1_001 },
  confirmIn: undefined,
};

describe('the TransferIns the facts keep', () => {
  it('decide as all of them did, at every step of any arrival order, whoever sent them and whatever they say', () => {
    const timeline = buildTimeline(spec);
    const [lock, copy] = timeline.streams[SRC.chainId]!.filter(
      (e): e is TransferOut => e.kind === 'TransferOut',
    );
    const confirmOut = timeline.streams[SRC.chainId]!.find((e) => e.kind === 'ConfirmOut')!;
    const answer = timeline.streams[DST.chainId]!.find((e): e is TransferIn => e.kind === 'TransferIn')!;
    const transferIn = fc.record({
      sender: fc.constantFrom(
        LP.address,
        LP.address,
        LP.address,
        LP.address.toLowerCase(),
        HOT_WALLET,
        STRANGER.address,
        STRANGER.address.toLowerCase(),
        USER.address,
        SILENT,
      ),
      names: fc.constantFrom('lock', 'lock', 'copy', 'copy', 'answer', 'nothing'),
      onSource: fc.constantFrom(false, false, false, false, false, false, false, false, false, true),
      at: fc.integer({ min: 999, max: 1_008 }),
      block: fc.integer({ min: 0, max: 3 }),
      logIndex: fc.integer({ min: 0, max: 2 }),
      amount: fc.constantFrom('agreed', 'agreed', 'agreed', 'short'),
      hashlock: fc.constantFrom('lock', 'copy', 'copy', 'other'),
      time: fc.constantFrom('agreed', 'agreed', 'agreed', 'other'),
      confirmedAt: fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        fc.array(transferIn, { minLength: 1, maxLength: 14 }),
        fc.boolean(),
        fc.boolean(),
        fc.array(fc.noBias(fc.integer({ min: 0, max: 1_000 })), { minLength: 40, maxLength: 40 }),
        fc.array(fc.integer({ min: 995, max: 1_030 }), { minLength: 3, maxLength: 3 }),
        fc.integer({ min: 0, max: 2 }),
        (drafts, earlierCopy, withConfirmOut, order, [src, dst, complaints], duplicates) => {
          // An earlier copy of the lock is the swap when it comes (it displaces the lock).
          const locks = earlierCopy ? [lock!, { ...copy!, blockTimestamp: 999 }] : [lock!];
          const events: ChainEvent[] = [...locks, ...(withConfirmOut ? [confirmOut] : [])];
          drafts.forEach((d, i) => {
            const chainId = d.onSource ? SRC.chainId : DST.chainId;
            const tin: TransferIn = {
              ...answer,
              chainId,
              blockTimestamp: d.at,
              blockNumber: d.at * 10 + d.block,
              logIndex: d.logIndex,
              txHash: hex(`tx ${i}`),
              transferId: hex(`in ${i}`),
              sender: d.sender,
              txFrom: d.sender,
              srcTransferId: {
                lock: lock!.transferId,
                copy: copy!.transferId,
                answer: answer.transferId,
                nothing: hex('nothing'),
              }[d.names],
              tokenAmount: d.amount === 'agreed' ? answer.tokenAmount : '1',
              hashlock: { lock: lock!.hashlock, copy: copy!.hashlock, other: hex('other') }[d.hashlock],
              agreementReachedTime: d.time === 'agreed' ? answer.agreementReachedTime : '999',
            };
            events.push(tin);
            if (d.confirmedAt !== undefined)
              events.push({
                kind: 'ConfirmIn',
                chainId,
                contract: tin.contract,
                blockNumber: 20_000 + i,
                blockTimestamp: d.at + d.confirmedAt,
                txHash: hex(`confirm ${i}`),
                logIndex: 0,
                txFrom: d.confirmedAt % 2 === 0 ? LP.address : RELAY.address,
                transferId: tin.transferId,
                preimage: '0x' + '01'.repeat(32),
              });
          });
          // Some delivered twice.
          for (let i = 0; i < duplicates; i++) events.push({ ...events[(order[i] ?? 0) % events.length]! });
          const arrival = events
            .map((event, i) => ({ event, key: order[i % order.length]! * 100 + i }))
            .sort((a, b) => a.key - b.key)
            .map(({ event }) => event);
          const env: JudgeEnv = {
            now: (chainId) => (chainId === SRC.chainId ? src : chainId === DST.chainId ? dst : undefined),
            complaintsSeenThrough: () => complaints,
            evmChainId: (chainId) => ({ [SRC.chainId]: SRC.evm, [DST.chainId]: DST.evm })[chainId],
            swapChains: () => [SRC.chainId, DST.chainId],
            agreementLocks: () => [],
            didNames: (address) => (address === SILENT ? undefined : (NAMES[address] ?? [])),
          };
          let kept = emptyFacts(timeline.bidId);
          let all = emptyFacts(timeline.bidId);
          for (const event of arrival) {
            kept = addFact(kept, event);
            all = keepingAll(all, event);
            if (kept.out === null) continue;
            expect(judge(kept, env)).toEqual(judge(all, env));
          }
          expect(kept.ins.length).toBeLessThanOrEqual(all.ins.length);
        },
      ),
      { numRuns: Number(process.env.PROPERTY_RUNS ?? 3_000) },
    );
  }, 300_000);
});

/**
 * Griefing TransferIns naming the honest swap's lock (T 1000, E 5000), before the LP's answer at 9000: terms as
 * agreed or not and a hashlock of its own now and then, from one sender (a second one now and then), or from a
 * new sender each with terms not agreed (a contract can call from as many addresses as it makes).
 */
function griefedSwap(id: number, senders: 'few' | 'new each' = 'few') {
  const timeline = buildTimeline({
    ...HONEST_SWAP,
    id,
    T: 1_000,
    E: 5_000,
    Tol: 100,
    out: { kind: 'ok', at: 1_000 },
    in: { kind: 'ok', at: 9_000 },
    griefIn: { at: 1_001 },
    confirmOut: { by: 'user', at: 9_001 },
    confirmIn: { by: 'lp', at: 9_002 },
  });
  const all = [...timeline.streams[SRC.chainId]!, ...timeline.streams[DST.chainId]!];
  const grief = all.find((e): e is TransferIn => e.kind === 'TransferIn' && e.sender === STRANGER.address)!;
  const honest = all.filter((e) => e !== grief);
  const griefers = (n: number): TransferIn[] =>
    Array.from({ length: n }, (_, i) => {
      const sender =
        senders === 'new each' ? hex(`sender ${i}`).slice(0, 42) : i % 7 === 0 ? RELAY.address : grief.sender;
      return {
        ...grief,
        blockNumber: 100_000 + i,
        blockTimestamp: 1_001 + Math.floor(i / 2),
        txHash: hex(`grief tx ${id} ${i}`),
        transferId: hex(`grief ${id} ${i}`),
        sender,
        txFrom: sender,
        tokenAmount: i % 3 === 0 && senders === 'few' ? grief.tokenAmount : String(i),
        hashlock: i % 5 === 0 ? hex(`grief hashlock ${i}`) : grief.hashlock,
      };
    });
  return { timeline, honest, griefers };
}

/** `event`, counting each read of one of its fields in `reads`. */
function counted<T extends object>(event: T, reads: { n: number }): T {
  return new Proxy(event, {
    get(target, property, receiver) {
      reads.n++;
      return Reflect.get(target, property, receiver);
    },
  });
}

describe('the work of a griefing TransferIn', () => {
  it.each(['few', 'new each'] as const)(
    'does not grow with the number of earlier ones (senders: %s; fields of griefing TransferIns read by addFact and judge)',
    (senders) => {
      const { timeline, honest, griefers } = griefedSwap(1, senders);
      const out = honest.find((e) => e.kind === 'TransferOut')!;
      // Both chains short of T+2E: every judgement is pending, as while a griefer floods.
      const env: JudgeEnv = {
        now: () => 2_000,
        complaintsSeenThrough: () => 2_000,
        evmChainId: (chainId) => ({ [SRC.chainId]: SRC.evm, [DST.chainId]: DST.evm })[chainId],
        swapChains: () => [SRC.chainId, DST.chainId],
        agreementLocks: () => [],
        didNames: (address) => DID_NAMES[address] ?? [],
      };
      const work = (n: number) => {
        const reads = { n: 0 };
        let facts = addFact(emptyFacts(timeline.bidId), out);
        for (const g of griefers(n)) {
          facts = addFact(facts, counted(g, reads));
          expect(judge(facts, env)).toMatchObject({ status: 'pending', wait: { kind: 'clock' } });
        }
        return reads.n;
      };
      const [w2000, w4000] = [work(2_000), work(4_000)];
      // Before: 4.0 (each step read every earlier TransferIn, in adding it and in judging).
      expect(w4000).toBeLessThan(2.5 * w2000);
    },
  );

  const db = databaseForSuite([classifierMigrations]);

  it.each([false, true])(
    'through the engine (resident: %s): DID lookups grow linearly, the facts keep a few, the verdict is unchanged',
    async (resident) => {
      const event = (e: ChainEvent): ClassifierInput => ({ kind: 'event', id: chainEventId(e), event: e });
      const run = async (n: number) => {
        const { timeline, honest, griefers } = griefedSwap(100 + n);
        let lookups = 0;
        const schema = `griefing_${resident ? 'resident' : 'live'}_${n}`;
        const { engine, tables } = await syntheticEngine(db.pool, schema, resident ? 'keep' : undefined, {
          did: {
            names: (address) => {
              lookups++;
              return DID_NAMES[address.toLowerCase()] ?? [];
            },
            request: () => undefined,
            stop: () => undefined,
          },
        });
        const out = honest.find((e) => e.kind === 'TransferOut')!;
        await engine.handleBatch([event(out)], batchContext());
        // Each refunded too (on terms of its own): only refunds of TransferIns that match the lock are kept.
        const inputs = griefers(n).flatMap((g, i) => [
          event(g),
          event({
            kind: 'RefundIn',
            chainId: g.chainId,
            contract: g.contract,
            blockNumber: 200_000 + i,
            blockTimestamp: g.blockTimestamp + 1,
            txHash: hex(`refund ${n} ${i}`),
            logIndex: 0,
            txFrom: g.sender,
            transferId: g.transferId,
          }),
        ]);
        for (let i = 0; i < inputs.length; i += 20)
          await engine.handleBatch(inputs.slice(i, i + 20), batchContext());
        const during = lookups;
        const rest = honest.filter((e) => e !== out).map(event);
        await engine.handleBatch([...rest, ...finalHeights(20_000)], batchContext());
        await engine.writeResident();
        const { rows } = await db.pool.query<{ ins: number; refunds: number; verdict: SwapVerdict }>(
          `SELECT jsonb_array_length(s.facts->'ins') AS ins, jsonb_array_length(s.facts->'refundIns') AS refunds,
                  v.verdict
             FROM ${tables.swaps} s JOIN ${tables.verdicts} v USING (bid_id) WHERE bid_id = $1`,
          [timeline.bidId],
        );
        return { lookups: during, ...rows[0]! };
      };
      const [small, large] = [await run(200), await run(400)];
      // Before: 3.9 (each judgement asked about every earlier griefer's sender as agreed).
      expect(large.lookups).toBeLessThan(2.5 * small.lookups);
      // Per sender its first TransferIn and its first better matches (2 each), and the LP's answer; 2 refunds.
      expect([large.ins, large.refunds]).toEqual([small.ins, small.refunds]);
      expect(large.ins).toBeLessThanOrEqual(5);
      expect(large.refunds).toBeLessThanOrEqual(2);
      for (const { verdict } of [small, large]) {
        expect(verdict).toMatchObject({ outcome: 'normal', blockTime: 9_002, responseTimeSeconds: 8_000 });
        // The griefers' senders were asked about, as before: their TransferIns as agreed came before the answer.
        expect(Object.keys(verdict.evidence.didNames)).toEqual(
          [LP.address, RELAY.address, STRANGER.address].map((a) => a.toLowerCase()).sort(),
        );
      }
    },
    120_000,
  );
});
