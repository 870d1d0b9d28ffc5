/**
 * A naive reference model of the arbitration rules and a generator of swap timelines the contract allows, for
 * the property test of judge.ts and the crash test and benchmark of the whole classifier.
 */
import fc from 'fast-check';
import type { SwapVerdict } from '../../topics/index.js';
import { LP_ID, USER, type TimelineSpec } from './swap-timeline.js';

/**
 * The reference model: the arbitration rules read straight off the complete timeline, as if every window had
 * closed (DESIGN §7, spec §3, windows of spec/otmoic.md §3). No clocks, no arrival order, no waiting. A
 * puppet TransferOut (its fields do not hash to the bid it names) and a later copy of the user's lock are not
 * the swap: they change nothing.
 */
export function model(
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

/**
 * Timelines the contract allows: every step inside its window (spec/otmoic.md §3). `lockAttacksOneIn`: a
 * stranger's puppet lock with the bid, and the user's lock again, each in about one timeline of that many
 * (4 for the property tests, which want them often; the benchmarks' workloads take them rarer).
 */
export const timelineSpec = (T = 1_000, lockAttacksOneIn = 4): fc.Arbitrary<TimelineSpec> =>
  fc
    .record({ E: fc.integer({ min: 1, max: 4 }), Tol: fc.integer({ min: 0, max: 4 }) })
    .chain(({ E, Tol }) => {
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
              puppetOut: oneIn(
                lockAttacksOneIn,
                fc.record({
                  at: between(T, T + 3 * E),
                  chain: fc.constantFrom('src' as const, 'dst' as const),
                }),
              ),
              copyOut: oneIn(lockAttacksOneIn, fc.record({ at: between(outAt, T + 3 * E) })),
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
                puppetOut: rest.puppetOut,
                copyOut: base.outKind === 'none' ? undefined : rest.copyOut,
                confirmOut: base.outKind === 'none' ? undefined : rest.confirmOut,
                confirmIn,
                // A swap without a TransferOut exists only through its complaint.
                complaint: base.outKind === 'none' ? rest.complaintForced : rest.complaint,
              };
            });
        });
    });

/** Present in about one case of four, absent (undefined) otherwise. */
/** `arbitrary` in about one case of `n`, else undefined. */
function oneIn<T>(n: number, arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ arbitrary: fc.constant(undefined), weight: n - 1 }, { arbitrary, weight: 1 });
}
