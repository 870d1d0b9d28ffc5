import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChainEvent, SwapVerdict } from '../../topics/index.js';
import { addFact, emptyFacts, type JudgeEnv } from './facts.js';
import { judge } from './judge.js';
import { model, timelineSpec } from './reference-model.js';
import { DID_NAMES, DST, REPUTATION_CHAIN, SRC, buildTimeline } from './swap-timeline.js';
import { lastWindowEnd } from './swap-traffic.js';

type Message = { stream: string; event?: ChainEvent; tick?: number };

/**
 * Each stream's messages in order: its events, with clock ticks (heights) that only come after every event
 * up to their time, ending at a time past every window.
 */
function streamMessages(events: ChainEvent[], stream: string, ticks: number[], final: number): Message[] {
  const messages: Message[] = [];
  const times = [...new Set([...ticks, final])].sort((a, b) => a - b);
  let i = 0;
  for (const tick of times) {
    while (i < events.length && events[i]!.blockTimestamp <= tick)
      messages.push({ stream, event: events[i++] });
    messages.push({ stream, tick });
  }
  return messages;
}

describe('judge (pure decision) against the reference model', () => {
  it('decides what the model says, whatever the arrival order, and never before its windows closed', () => {
    fc.assert(
      fc.property(
        timelineSpec(),
        fc.array(fc.integer({ min: 990, max: 1_060 }), { maxLength: 12 }),
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 60, maxLength: 60 }),
        (spec, tickTimes, schedule) => {
          const timeline = buildTimeline(spec);
          const final = lastWindowEnd(spec);
          const queues = [
            streamMessages(timeline.streams[SRC.chainId]!, SRC.chainId, tickTimes, final),
            streamMessages(timeline.streams[DST.chainId]!, DST.chainId, tickTimes, final),
            streamMessages(timeline.streams.reputation!, 'reputation', tickTimes, final),
          ];
          const clocks = new Map<string, number>();
          const env: JudgeEnv = {
            now: (chainId) => clocks.get(chainId),
            complaintsSeenThrough: () => clocks.get('reputation'),
            evmChainId: (chainId) => ({ [SRC.chainId]: SRC.evm, [DST.chainId]: DST.evm })[chainId],
            swapChains: () => [SRC.chainId, DST.chainId],
            agreementLocks: () => [],
            didNames: (address) => DID_NAMES[address] ?? [],
          };
          let facts = emptyFacts(timeline.bidId);
          const decided: SwapVerdict[] = [];
          let step = 0;
          while (queues.some((q) => q.length > 0)) {
            // A random interleaving of the three streams, each kept in its own order.
            const open = queues.filter((q) => q.length > 0);
            const message = open[(schedule[step++ % schedule.length] ?? 0) % open.length]!.shift()!;
            if (message.event) facts = addFact(facts, message.event);
            else clocks.set(message.stream, message.tick!);
            if (facts.out === null && facts.complaints.length === 0) continue;
            const judgement = judge(facts, env);
            if (judgement.status === 'decided') decided.push(judgement.verdict);
          }
          // Every stream reached a time past every window: the swap is decided.
          expect(decided.length).toBeGreaterThan(0);
          const first = decided[0]!;
          for (const later of decided) expect(later).toEqual(first);
          const expected = model(spec);
          expect({
            outcome: first.outcome,
            case: first.case,
            party: first.party,
            subject: first.subject,
            blockTime: first.blockTime,
          }).toEqual(expected);
          // A complaint counts for a swap with a TransferOut only when filed by the verdict's block time.
          if (spec.out.kind !== 'none') {
            const counted =
              spec.complaint !== undefined && spec.complaint.at <= Math.max(expected.blockTime, spec.out.at);
            expect(first.complaint !== null).toBe(counted);
          }
          if (first.outcome === 'normal')
            expect(first.responseTimeSeconds).toBe(
              (spec.in as { at: number }).at - (spec.out as { at: number }).at,
            );
        },
      ),
      {
        numRuns: Number(process.env.PROPERTY_RUNS ?? 400),
        examples: [
          // Found by this test: a griefer's TransferIn after the deciding block time must not change the
          // evidence (its sender's DID lookup was recorded only when it happened to be seen in time).
          [
            {
              T: 1000,
              E: 3,
              Tol: 0,
              lpSign: 'lp',
              userSign: 'user',
              out: { kind: 'ok', at: 1000 },
              in: { kind: 'ok', at: 1000 },
              griefIn: { at: 1001 },
              confirmOut: { by: 'user', at: 1000 },
              confirmIn: { by: 'lp', at: 1000 },
              complaint: undefined,
            },
            [1000],
            [0, 0, 0, 0, 0, 1, ...new Array<number>(54).fill(0)],
          ],
        ],
      },
    );
  }, 600_000);

  it('waits for the DID support service instead of guessing', () => {
    const timeline = buildTimeline({
      T: 1_000,
      E: 2,
      Tol: 1,
      lpSign: 'lp',
      userSign: 'user',
      out: { kind: 'ok', at: 1_001 },
      in: { kind: 'none' },
    });
    const facts = addFact(emptyFacts(timeline.bidId), timeline.streams[SRC.chainId]![0]!);
    const judgement = judge(facts, {
      now: () => 2_000,
      complaintsSeenThrough: () => 2_000,
      evmChainId: (chainId) => ({ [SRC.chainId]: SRC.evm, [DST.chainId]: DST.evm })[chainId],
      swapChains: () => [SRC.chainId, DST.chainId],
      agreementLocks: () => [],
      didNames: () => undefined,
    });
    expect(judgement).toMatchObject({ status: 'pending', wait: { kind: 'did' } });
    void REPUTATION_CHAIN;
  });
});
