/**
 * How long an orphan (an event whose swap is not known: classifier_orphans) is kept: until the event that would
 * adopt it can no longer come. Anyone can send a TransferIn, ConfirmIn or RefundIn naming a transfer that never
 * existed (or a lock on a chain not watched), paying only gas; kept for ever, the table grew without bound.
 *
 * Each orphan gets a block time, `expires_at`, fixed when it is kept; it is removed once the clock of every
 * watched chain (its swap stream: the block time up to which every event of the chain was handled, held heights
 * included) is past it. The clocks come from the input topics, never the wall clock, so live and replay remove
 * the same orphans, and no removed orphan could have joined a swap (below), so no verdict depends on when it
 * went. The rules, by what adopts each kind (engine.ts route / adopt):
 *
 * - TransferIn, naming a lock (srcTransferId): adopted by the TransferOut with that transfer id, on whichever
 *   chain (its `srcChainId` is the TransferIn's claim; a transfer id hashes the chain it was locked on, which
 *   the TransferIn does not say). transferInExpiry (lock-terms.ts): its own block time, or its own T+E when later
 *   (at most a week later), plus a day. A lock on the TransferIn's times is refused by the contract after that
 *   T+E, so it is handled before its chain's clock passes it; a TransferIn whose lock comes later is not
 *   counted in any arrival order (lock-terms.ts outlivedByItsLock). A lock on a chain not watched never comes:
 *   that orphan goes with the rest, since no verdict can be formed without the lock.
 * - ConfirmOut / RefundOut, naming a lock: the contract takes them only for a lock pending on the same chain, so
 *   that TransferOut was mined on their own chain before them and was handled before that chain's clock passed
 *   their block time (a dead-lettered one holds the clock). If they are orphans then, the lock was not a swap's
 *   (a foreign TransferOut: nothing joins it) or is older than the chain's history: their block time plus a day.
 * - ConfirmIn / RefundIn, naming a TransferIn: that TransferIn was mined on their own chain before them, and they
 *   join a swap only through it (with it, when it is adopted as an orphan). Their block time plus a week and a
 *   day: past any expiry of the TransferIn they name (at most its block time plus a week and a day), and past
 *   their chain's clock, by which their TransferIn was handled (a TransferIn naming a TransferIn, or none seen).
 *
 * Complaints and TransferOuts are never orphans. The day (ORPHAN_CLOCK_MARGIN_SECONDS) is a margin for chains
 * whose block times disagree and for an event the Connector publishes after its chunk (counted in
 * classifier_late_events_total); the clock of every watched chain, not only the one the adopting event must come
 * from, is a margin too: one chain's clock that stopped keeps every orphan.
 */
import type { ChainEvent } from '../../topics/index.js';
import {
  ORPHAN_AGREEMENT_HORIZON_SECONDS,
  ORPHAN_CLOCK_MARGIN_SECONDS,
  transferInExpiry,
} from './lock-terms.js';

export { ORPHAN_AGREEMENT_HORIZON_SECONDS, ORPHAN_CLOCK_MARGIN_SECONDS };

/** The block time after which (on every watched chain's clock) nothing can adopt `event` as an orphan. */
export function orphanExpiry(event: ChainEvent): number {
  switch (event.kind) {
    case 'TransferIn':
      return transferInExpiry(event);
    case 'ConfirmOut':
    case 'RefundOut':
      return event.blockTimestamp + ORPHAN_CLOCK_MARGIN_SECONDS;
    case 'ConfirmIn':
    case 'RefundIn':
      return event.blockTimestamp + ORPHAN_AGREEMENT_HORIZON_SECONDS + ORPHAN_CLOCK_MARGIN_SECONDS;
    case 'TransferOut':
    case 'Complaint':
      return Number.MAX_SAFE_INTEGER;
  }
}

/**
 * orphanExpiry in SQL over a stored orphan's `event` (jsonb): the migration that added the column fills it for
 * the orphans kept before (orphan-retention.test.ts holds the two equal). Member names and decimal strings are
 * stored as they are, U+0000 escapes or not (jsonb-nul.ts).
 */
export function orphanExpirySql(event: string): string {
  const own = `(${event}->>'blockTimestamp')::numeric`;
  const slack = `(${event}->>'agreementReachedTime')::numeric + (${event}->>'expectedSingleStepTime')::numeric - ${own}`;
  const kept = `LEAST(GREATEST(${slack}, 0), ${ORPHAN_AGREEMENT_HORIZON_SECONDS})`;
  return `LEAST(${own} + CASE ${event}->>'kind'
      WHEN 'TransferIn' THEN ${kept} + ${ORPHAN_CLOCK_MARGIN_SECONDS}
      WHEN 'ConfirmOut' THEN ${ORPHAN_CLOCK_MARGIN_SECONDS}
      WHEN 'RefundOut' THEN ${ORPHAN_CLOCK_MARGIN_SECONDS}
      WHEN 'ConfirmIn' THEN ${ORPHAN_AGREEMENT_HORIZON_SECONDS + ORPHAN_CLOCK_MARGIN_SECONDS}
      WHEN 'RefundIn' THEN ${ORPHAN_AGREEMENT_HORIZON_SECONDS + ORPHAN_CLOCK_MARGIN_SECONDS}
      ELSE ${Number.MAX_SAFE_INTEGER} END, ${Number.MAX_SAFE_INTEGER})::bigint`;
}
