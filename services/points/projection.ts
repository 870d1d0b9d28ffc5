/**
 * What each input event does to Points' projections, as pure functions (no database): the bus shell in
 * consumer.ts applies the rows they return exactly once.
 */
import { createHash } from 'node:crypto';
import { jsonbStorable } from '../../shared/db/nul.js';
import type { ChainEvent } from '../../topics/chain.events.js';
import type { SwapTransaction, SwapVerdict } from '../../topics/swap.verdicts.js';
import type { Violation } from '../../topics/violations.js';
import { TENTHS_PER_VIOLATION } from './scoring.js';

export interface DeductionRow {
  bidId: string;
  party: 'user' | 'lp';
  subject: string;
  case: number;
  srcChainId: string;
  dstChainId: string | null;
  chainId: string;
  blockTime: number;
  rule: string;
  tenths: number;
  transactions: SwapTransaction[];
  eventId: string;
}

export interface VerdictRow {
  bidId: string;
  outcome: SwapVerdict['outcome'];
  blockTime: number;
  verdict: SwapVerdict;
  eventId: string;
}

/** A swap that counts for its LP's tier. */
export interface LpSwapRow {
  bidId: string;
  lpId: string;
  blockTime: number;
  normal: boolean;
  responseTimeSeconds: number | null;
}

export interface ComplaintRow {
  eventId: string;
  bidId: string;
  chainId: string;
  txHash: string;
  blockNumber: number;
  blockTime: number;
  complainant: string;
  fields: Record<string, string>;
}

export type Effect =
  | { kind: 'deduction'; row: DeductionRow }
  | { kind: 'verdict'; row: VerdictRow }
  | { kind: 'lp-swap'; row: LpSwapRow }
  | { kind: 'complaint'; row: ComplaintRow };

/** Users are keyed by lower-case address everywhere (the topic says so; this makes it so). */
export function normalizeSubject(party: 'user' | 'lp', subject: string): string {
  return party === 'user' ? subject.toLowerCase() : subject;
}

export function violationEffects(eventId: string, v: Violation): Effect[] {
  return [
    {
      kind: 'deduction',
      row: {
        bidId: v.bidId,
        party: v.party,
        subject: normalizeSubject(v.party, v.subject),
        case: v.case,
        srcChainId: v.srcChainId,
        dstChainId: v.dstChainId,
        chainId: v.chainId,
        blockTime: v.blockTime,
        rule: v.rule,
        tenths: TENTHS_PER_VIOLATION,
        transactions: v.transactions,
        eventId,
      },
    },
  ];
}

/**
 * Largest response time counted for a swap (2^32 s, 136 years): the topic takes any safe integer, and the sums
 * of an LP's response times (SQL and the score cache) must stay exact, so that one LP's absurd figures (a
 * chain client's broken timestamps) cannot fail the ranking of every LP. Up to 2^21 swaps at the bound sum
 * below 2^53. Real response times are seconds to hours.
 */
export const MAX_COUNTED_RESPONSE_SECONDS = 2 ** 32;

/**
 * Which swaps count for an LP's tier: normal swaps, and swaps the LP itself broke. A swap the user broke (or
 * an unknown one, or an invalid complaint) says nothing about the LP, so it is in neither the count nor the
 * success rate: otherwise any user could lower an LP's rate by abandoning swaps.
 */
export function lpSwapOf(v: SwapVerdict): LpSwapRow | null {
  if (v.lpId === null) return null;
  const normal = v.outcome === 'normal';
  const lpBroke = v.outcome === 'violation' && v.party === 'lp';
  if (!normal && !lpBroke) return null;
  return {
    bidId: v.bidId,
    lpId: v.lpId,
    blockTime: v.blockTime,
    normal,
    responseTimeSeconds:
      normal && v.responseTimeSeconds !== null
        ? Math.min(v.responseTimeSeconds, MAX_COUNTED_RESPONSE_SECONDS)
        : null,
  };
}

export function verdictEffects(eventId: string, v: SwapVerdict): Effect[] {
  const effects: Effect[] = [
    {
      kind: 'verdict',
      row: { bidId: v.bidId, outcome: v.outcome, blockTime: v.blockTime, verdict: v, eventId },
    },
  ];
  const lpSwap = lpSwapOf(v);
  if (lpSwap) effects.push({ kind: 'lp-swap', row: lpSwap });
  return effects;
}

/** Only complaints matter to Points among chain events (kept until, and after, their verdict). */
export function chainEventEffects(eventId: string, e: ChainEvent): Effect[] {
  if (e.kind !== 'Complaint') return [];
  return [
    {
      kind: 'complaint',
      row: {
        eventId,
        bidId: e.bidId,
        chainId: e.chainId,
        txHash: e.txHash,
        blockNumber: e.blockNumber,
        blockTime: e.blockTimestamp,
        complainant: e.complainant,
        fields: e.complaint,
      },
    },
  ];
}

/**
 * PostgreSQL text and jsonb cannot hold U+0000 (SQLSTATE 22P05 / 22021), and any string on chain can carry it:
 * any DID owner can submit a complaint whose lpId is "lp\u0000x". Such a character is stored as the six
 * characters `\u0000` instead, in every string and key of the rows: the same input always gives the same rows
 * (live and replay alike), nothing of the violation is lost, and retrying could never have stored it. Nor can
 * jsonb hold a lone UTF-16 surrogate (JSON text may escape one, `"\ud800"`): it is stored as U+FFFD, the
 * replacement character, so the message is kept rather than dead-lettered.
 */
export function withoutNul<T>(value: T): T {
  return jsonbStorable(value);
}

/**
 * Longest LP id (UTF-8 bytes) stored as it is. An index row holds at most 2,704 bytes (points_deductions'
 * subject, points_lp_swaps' lp_id), and an LP id is the LP's own DID name: a longer one failed every insert,
 * so the LP's verdicts and violations were dead-lettered and it escaped every deduction.
 */
export const MAX_STORED_LP_ID_BYTES = 1_000;
const KEPT_PREFIX_BYTES = 900;

/**
 * An LP id's key: every `@` read as `.` (`acme@lp` → `acme.lp`). The Classifier takes an LP's consent under its
 * DID name and under that name's domain form (didDomainOf: the first `@` read as `.`), so an LP could otherwise
 * keep its violations under one spelling and quote under the other. Every `@`, not only the first: a name
 * `a@b@c` consents as `a@b@c` and as `a.b@c`, and the key must map to itself, or the id the ranking lists
 * (`a.b@c`) is looked up as `a.b.c`, another LP's key.
 */
export const lpKeyOf = (written: string): string => written.replaceAll('@', '.');

/**
 * How an LP id is stored and looked up: its key (lpKeyOf), as it is up to MAX_STORED_LP_ID_BYTES, else its
 * first 900 bytes (whole characters), `…#sha256:` and the SHA-256 of the whole key, so that distinct ids stay
 * distinct. The answers show that form; a query by the full id, under either spelling, or by the stored form
 * itself finds it (queries.ts applies the same).
 */
export function storedLpId(written: string): string {
  const lpId = lpKeyOf(written);
  // Every LP row of every message passes here: the common short id is measured, not copied.
  if (Buffer.byteLength(lpId, 'utf8') <= MAX_STORED_LP_ID_BYTES) return lpId;
  const bytes = Buffer.from(lpId, 'utf8');
  let end = KEPT_PREFIX_BYTES;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--; // not inside a character
  const digest = createHash('sha256').update(bytes).digest('hex');
  return `${bytes.subarray(0, end).toString('utf8')}…#sha256:${digest}`;
}

/** Rows with LP ids an index can hold (storedLpId). */
export function withStorableLpIds(effects: Effect[]): Effect[] {
  return effects.map((effect) => {
    if (effect.kind === 'deduction' && effect.row.party === 'lp') {
      const subject = storedLpId(effect.row.subject);
      return subject === effect.row.subject ? effect : { ...effect, row: { ...effect.row, subject } };
    }
    if (effect.kind === 'lp-swap') {
      const lpId = storedLpId(effect.row.lpId);
      return lpId === effect.row.lpId ? effect : { ...effect, row: { ...effect.row, lpId } };
    }
    return effect;
  });
}

/** The subjects (`party:subject`) whose facts an event changes: what the score cache must forget. */
export function changedSubjects(effects: readonly Effect[]): string[] {
  const keys = new Set<string>();
  for (const effect of effects) {
    if (effect.kind === 'deduction') keys.add(`${effect.row.party}:${effect.row.subject}`);
    if (effect.kind === 'lp-swap') keys.add(`lp:${effect.row.lpId}`);
  }
  return [...keys];
}
