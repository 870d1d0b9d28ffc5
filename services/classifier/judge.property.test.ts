import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChainEvent, SwapVerdict } from '../../topics/index.js';
import { addFact, emptyFacts, type JudgeEnv } from './facts.js';
import { judge } from './judge.js';
import {
  DID_NAMES,
  DST,
  LP_ID,
  REPUTATION_CHAIN,
  SRC,
  USER,
  buildTimeline,
  type TimelineSpec,
} from './swap-timeline.js';

/**
 * The reference model: the arbitration rules read straight off the complete timeline, as if every window had
 * closed (DESIGN §7, spec §3, windows of spec/otmoic.md §3). No clocks, no arrival order, no waiting.
 */
function model(
  spec: TimelineSpec,
): Pick<SwapVerdict, 'outcome' | 'case' | 'party' | 'subject' | 'blockTime'> {
  const { T, E, Tol } = spec;
  const user = USER.address.toLowerCase();
  const violation = (party: 'user' | 'lp', n: number, blockTime: number) => ({
    outcome: 'violation' as const,
    case: n,
    party,
    subject: party === 'user' ? user : LP_ID,
    blockTime,
  });
  if (spec.out.kind === 'none') {
    const c = spec.complaint!;
    const valid = spec.userSign === 'user' && spec.lpSign === 'lp' && c.by !== 'stranger';
    return valid
      ? violation('user', 1, T + E)
      : { outcome: 'invalid_complaint', case: 0, party: null, subject: null, blockTime: c.at };
  }
  const out = spec.out;
  if (spec.lpSign !== 'lp' || out.kind !== 'ok') return violation('user', 2, out.at);
  if (spec.in.kind === 'none') return violation('lp', 3, T + 2 * E);
  if (spec.in.kind !== 'ok') return violation('lp', 4, spec.in.at);
  const co = spec.confirmOut;
  const ci = spec.confirmIn;
  if (ci && ci.by !== 'lp' && !(co && co.at <= ci.at)) return violation('user', 7, ci.at);
  if (!(co && co.by === 'user' && co.at <= T + 3 * E)) return violation('user', 5, T + 3 * E);
  if (!(ci && ci.by === 'lp' && ci.at <= T + 3 * E + Tol)) return violation('lp', 6, T + 3 * E + Tol);
  return co.at <= ci.at
    ? { outcome: 'normal', case: null, party: null, subject: null, blockTime: ci.at }
    : { outcome: 'unknown', case: null, party: null, subject: null, blockTime: co.at };
}

/** Timelines the contract allows: every step inside its window (spec/otmoic.md §3). */
const timelineSpec: fc.Arbitrary<TimelineSpec> = fc
  .record({ E: fc.integer({ min: 1, max: 4 }), Tol: fc.integer({ min: 0, max: 4 }) })
  .chain(({ E, Tol }) => {
    const T = 1_000;
    const between = (lo: number, hi: number) => fc.integer({ min: lo, max: Math.max(lo, hi) });
    return fc
      .record({
        lpSign: fc.constantFrom('lp', 'lp', 'lp', 'stranger', 'garbage'),
        userSign: fc.constantFrom('user', 'user', 'stranger'),
        outKind: fc.constantFrom('none', 'ok', 'ok', 'ok', 'ok', 'short_amount', 'wrong_receiver'),
        outAt: between(T, T + E),
      })
      .chain((base) => {
        const outAt = base.outAt;
        const lockIn = fc.oneof(
          fc.constant({ kind: 'none' as const }),
          fc.record({
            kind: fc.constantFrom('ok', 'ok', 'ok', 'wrong_amount', 'wrong_hashlock'),
            at: between(outAt, T + 2 * E),
          }),
        );
        return fc
          .record({
            in: base.outKind === 'none' ? fc.constant({ kind: 'none' as const }) : lockIn,
            griefIn: fc.option(fc.record({ at: between(outAt, T + 2 * E) }), { nil: undefined }),
            confirmOut: fc.option(
              fc.oneof(
                fc.record({ by: fc.constant('user' as const), at: between(outAt, T + 3 * E) }),
                fc.record({
                  by: fc.constant('relay' as const),
                  at: between(T + 3 * E + 2 * Tol, T + 3 * E + 3 * Tol),
                }),
              ),
              { nil: undefined },
            ),
            confirmInBy: fc.constantFrom('lp', 'lp', 'user', 'relay', 'none'),
            confirmInLate: between(T + 3 * E + Tol, T + 3 * E + 2 * Tol),
            complaint: fc.option(
              fc.record({
                by: fc.constantFrom('lp', 'user', 'stranger'),
                at: between(T, T + 3 * E + 3 * Tol + 5),
              }),
              { nil: base.outKind === 'none' ? undefined : undefined },
            ),
            complaintForced: fc.record({
              by: fc.constantFrom('lp', 'user', 'stranger'),
              at: between(T, T + 3 * E + 3 * Tol + 5),
            }),
            lpConfirmFraction: fc.integer({ min: 0, max: 100 }),
          })
          .map((rest): TimelineSpec => {
            const lockedIn = rest.in;
            let confirmIn: TimelineSpec['confirmIn'];
            if (lockedIn.kind !== 'none' && rest.confirmInBy !== 'none') {
              if (rest.confirmInBy === 'lp') {
                const lo = lockedIn.at;
                const hi = T + 3 * E + Tol;
                confirmIn = { by: 'lp', at: lo + Math.floor(((hi - lo) * rest.lpConfirmFraction) / 100) };
              } else {
                confirmIn = {
                  by: rest.confirmInBy as 'user' | 'relay',
                  at: Math.max(lockedIn.at, rest.confirmInLate),
                };
              }
            }
            return {
              T,
              E,
              Tol,
              lpSign: base.lpSign as TimelineSpec['lpSign'],
              userSign: base.userSign as TimelineSpec['userSign'],
              out: base.outKind === 'none' ? { kind: 'none' } : { kind: base.outKind as 'ok', at: outAt },
              in: lockedIn as TimelineSpec['in'],
              griefIn: base.outKind === 'none' ? undefined : rest.griefIn,
              confirmOut: base.outKind === 'none' ? undefined : rest.confirmOut,
              confirmIn,
              // A swap without a TransferOut exists only through its complaint.
              complaint: base.outKind === 'none' ? rest.complaintForced : rest.complaint,
            };
          });
      });
  });

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
        timelineSpec,
        fc.array(fc.integer({ min: 990, max: 1_060 }), { maxLength: 12 }),
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 60, maxLength: 60 }),
        (spec, tickTimes, schedule) => {
          const timeline = buildTimeline(spec);
          const final = spec.T + 3 * spec.E + 3 * spec.Tol + 20;
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
      { numRuns: 400 },
    );
  });

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
      didNames: () => undefined,
    });
    expect(judgement).toMatchObject({ status: 'pending', wait: { kind: 'did' } });
    void REPUTATION_CHAIN;
  });
});
