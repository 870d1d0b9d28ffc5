import { orphanExpirySql } from './orphan-retention.js';

/**
 * The classifier's projection tables. The live ones live in the default schema (created by the migration);
 * a replay builds the same tables in a fresh schema and compares (replay.ts), so the DDL is one function.
 */
export interface ClassifierTables {
  schema: string;
  swaps: string;
  orphans: string;
  inLinks: string;
  clocks: string;
  pendingHeights: string;
  verdicts: string;
  violations: string;
  ignoredOuts: string;
  missingEvents: string;
  agreementLocks: string;
}

export function classifierTables(schema = 'public'): ClassifierTables {
  const q = (name: string) => `"${schema}".${name}`;
  return {
    schema,
    swaps: q('classifier_swaps'),
    orphans: q('classifier_orphans'),
    inLinks: q('classifier_in_links'),
    clocks: q('classifier_clocks'),
    pendingHeights: q('classifier_pending_heights'),
    verdicts: q('classifier_verdicts'),
    violations: q('classifier_violations'),
    ignoredOuts: q('classifier_ignored_transfer_outs'),
    missingEvents: q('classifier_missing_events'),
    agreementLocks: q('classifier_agreement_locks'),
  };
}

/** Every table of the projection (a replay's fresh schema, a test's). */
export function classifierDdl(t: ClassifierTables): string {
  return (
    swapProjectionDdl(t) +
    ignoredOutsDdl(t) +
    missingEventsDdl(t) +
    lockLinksDdl(t) +
    orphanExpiryDdl(t) +
    agreementLocksDdl(t)
  );
}

/** The tables of the first migration (its text is checksummed: never edit it, add a migration). */
export function swapProjectionDdl(t: ClassifierTables): string {
  return `
    -- One row per swap (bidId): the facts seen so far, and what a pending swap waits for.
    CREATE TABLE ${t.swaps} (
      bid_id text PRIMARY KEY,
      out_transfer_id text UNIQUE,
      facts jsonb NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'decided')),
      wait_kind text CHECK (wait_kind IN ('clock', 'complaints', 'did')),
      wait_chain text,
      wait_until bigint,
      wait_address text,
      waiting_for text,
      first_seen_at timestamptz NOT NULL DEFAULT now(),
      decided_at timestamptz
    );
    CREATE INDEX ON ${t.swaps} (wait_kind, wait_chain, wait_until) WHERE status = 'pending';
    CREATE INDEX ON ${t.swaps} (wait_address) WHERE status = 'pending' AND wait_kind = 'did';
    -- Events whose swap is not known yet (the destination chain arrived first), by the transfer id they name.
    CREATE TABLE ${t.orphans} (
      event_id text PRIMARY KEY,
      ref text NOT NULL,
      event jsonb NOT NULL
    );
    CREATE INDEX ON ${t.orphans} (ref);
    -- TransferIn transferId → its swap, for ConfirmIn / RefundIn.
    CREATE TABLE ${t.inLinks} (
      in_transfer_id text PRIMARY KEY,
      bid_id text NOT NULL
    );
    -- Each chain stream's clock: the newest height whose events have all been handled.
    CREATE TABLE ${t.clocks} (
      chain_id text NOT NULL,
      stream text NOT NULL,
      height bigint NOT NULL,
      block_time bigint NOT NULL,
      PRIMARY KEY (chain_id, stream)
    );
    -- Heights seen before the last event of their chunk.
    CREATE TABLE ${t.pendingHeights} (
      chain_id text NOT NULL,
      stream text NOT NULL,
      height bigint NOT NULL,
      block_time bigint NOT NULL,
      last_event_id text NOT NULL,
      PRIMARY KEY (chain_id, stream, height)
    );
    CREATE INDEX ON ${t.pendingHeights} (last_event_id);
    -- What was published (or, in a replay, would be): compared by the replay.
    CREATE TABLE ${t.verdicts} (
      bid_id text PRIMARY KEY,
      verdict jsonb NOT NULL,
      decided_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE ${t.violations} (
      bid_id text PRIMARY KEY,
      violation jsonb NOT NULL
    );
  `;
}

/**
 * TransferOuts that are not the swap of the bid they name (engine.ts): 'foreign', its own fields do not hash
 * to that bid (anyone can lock with any bid); 'copy', another lock of the same agreement, later in chain
 * order than the swap's. Recorded for the operator, never blamed on anyone; nothing joins them.
 */
export function ignoredOutsDdl(t: ClassifierTables): string {
  return `
    CREATE TABLE ${t.ignoredOuts} (
      event_id text PRIMARY KEY,
      bid_id text NOT NULL,
      chain_id text NOT NULL,
      transfer_id text NOT NULL,
      reason text NOT NULL CHECK (reason IN ('foreign', 'copy')),
      detail text NOT NULL,
      event jsonb NOT NULL,
      first_seen_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX ON ${t.ignoredOuts} (bid_id);
  `;
}

/**
 * Chain events this group dead-lettered and never applied (engine.ts deadLettered): each holds its chain
 * stream's clock below its block until it is applied (redriven; the row goes) or released by the operator
 * (`released`; the engine lets the clock pass it and sets `release_applied`). A released row stays as a
 * tombstone: a copy of that event dead-lettered again (a later redrive) holds nothing. One that does not
 * decode holds its chain (the message key) from block 0, under its envelope id or a digest of its value.
 */
export function missingEventsDdl(t: ClassifierTables): string {
  return `
    CREATE TABLE ${t.missingEvents} (
      chain_id text NOT NULL,
      stream text NOT NULL CHECK (stream IN ('swap', 'reputation')),
      event_id text NOT NULL,
      block_number bigint NOT NULL,
      error text NOT NULL,
      released boolean NOT NULL DEFAULT false,
      release_applied boolean NOT NULL DEFAULT false,
      dead_lettered_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (chain_id, stream, event_id)
    );
  `;
}

/**
 * Which links are another lock of the swap's agreement (a later TransferOut of the same agreement by the user,
 * engine.ts): a TransferIn naming one joins the swap, as one naming the swap's own lock. The other links are
 * TransferIns' transfer ids, which only their ConfirmIn / RefundIn may name: a TransferIn naming a TransferIn
 * answers no lock. Links written before this column were of either kind; the locks among them are the 'copy'
 * TransferOuts recorded in ignoredOuts.
 */
export function lockLinksDdl(t: ClassifierTables): string {
  return `
    ALTER TABLE ${t.inLinks} ADD COLUMN lock boolean NOT NULL DEFAULT false;
    UPDATE ${t.inLinks} l SET lock = true
      FROM ${t.ignoredOuts} o WHERE o.reason = 'copy' AND o.transfer_id = l.in_transfer_id;
  `;
}

/**
 * When each orphan can no longer be adopted (orphan-retention.ts): it is removed once every watched chain's
 * clock is past `expires_at`, by one statement on its index in the batch where that clock moves. The orphans
 * kept before this column get the expiry their event gives (the same rule, in SQL).
 */
export function orphanExpiryDdl(t: ClassifierTables): string {
  return `
    ALTER TABLE ${t.orphans} ADD COLUMN expires_at bigint;
    UPDATE ${t.orphans} SET expires_at = ${orphanExpirySql('event')};
    ALTER TABLE ${t.orphans} ALTER COLUMN expires_at SET NOT NULL;
    CREATE INDEX ON ${t.orphans} (expires_at);
  `;
}

/**
 * Every TransferOut that executes its bid (a swap's lock, or a copy of it), under each key of its agreement
 * (shared/otmoic/agreement.ts agreementKey: its sender form, and its receiver form when that is another address).
 * One signed agreement has many bids; a complaint quoting it under a bid nothing was locked under is not case 1
 * when the agreement was locked under another (judge.ts). Kept for ever, as the swaps are: a complaint may be
 * filed long after its T+E. The rows of the locks seen before this table are computed from the stored
 * TransferOuts (agreementLocksBackfill).
 *
 * `copy_key` (facts.ts copyKeysOf: the agreement key with the lock's lpSign) finds the other locks of the same
 * agreement and LP consent under any bid: the earliest is the swap, the others its copies (engine route). The
 * migration leaves it NULL for the locks seen before it (their canonical lpSign is not computed in SQL): a lock
 * of such an agreement that comes after the upgrade is judged as its own bid's swap, as before.
 */
export function agreementLocksDdl(t: ClassifierTables): string {
  return `
    CREATE TABLE ${t.agreementLocks} (
      agreement_key text NOT NULL,
      chain_id text NOT NULL,
      transfer_id text NOT NULL,
      bid_id text NOT NULL,
      block_time bigint NOT NULL,
      -- copyKey of this agreement key and the lock's lpSign; NULL for a row computed by the migration.
      copy_key text,
      PRIMARY KEY (agreement_key, chain_id, transfer_id)
    );
    CREATE INDEX ON ${t.agreementLocks} (copy_key) WHERE copy_key IS NOT NULL;
  `;
}

/**
 * The lock rows of the TransferOuts stored before the table (the swaps' own locks, and the copies), their keys
 * computed in SQL exactly as agreementKey does: members written as UTF-8 byte length, ':', value; chain ids and
 * times in base 10; every address as its number (hex → decimal in a session function); SHA-256 in hex. A
 * document stored escaped for U+0000 (jsonb-nul.ts, marked by a member U+F000) is left out: PostgreSQL text cannot
 * hold what it says. A TransferOut whose receiver is its sender has one key.
 */
export function agreementLocksBackfill(t: ClassifierTables): string {
  const member = (v: string) => `(octet_length(${v})::text || ':' || (${v}))`;
  const num = (v: string) => `(${v})::numeric::text`;
  const addr = (v: string) => `pg_temp.classifier_hex_to_dec(${v})`;
  const key = (src: string) =>
    `encode(sha256(convert_to(${[
      member(num(`e->>'chainId'`)),
      member(addr(src)),
      member(addr(`e->>'token'`)),
      member(`e->>'amount'`),
      member(num(`e->>'dstChainId'`)),
      member(num(`e->>'dstAddress'`)),
      member(num(`e->>'tokenDst'`)),
      member(`e->>'amountDst'`),
      member(`e->>'nativeAmountDst'`),
      member(`e->>'requestor'`),
      member(`e->>'lpId'`),
      member(num(`e->>'agreementReachedTime'`)),
      member(num(`e->>'expectedSingleStepTime'`)),
      member(num(`e->>'tolerantSingleStepTime'`)),
      member(num(`e->>'earliestRefundTime'`)),
    ].join(' || ')}, 'UTF8')), 'hex')`;
  return `
    CREATE FUNCTION pg_temp.classifier_hex_to_dec(h text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
    DECLARE
      r numeric := 0;
      i int;
    BEGIN
      h := lower(substr(h, 3));
      FOR i IN 1..length(h) LOOP
        r := r * 16 + (strpos('0123456789abcdef', substr(h, i, 1)) - 1);
      END LOOP;
      RETURN r::text;
    END $$;
    WITH stored AS (
      SELECT facts->'out' AS e FROM ${t.swaps}
       WHERE jsonb_typeof(facts->'out') = 'object' AND NOT facts ? ''
      UNION ALL
      SELECT event AS e FROM ${t.ignoredOuts} WHERE reason = 'copy' AND NOT event ? ''
    ), outs AS (
      -- Only what reads as a TransferOut (the event schema's forms): anything else is no lock.
      SELECT e FROM stored
       WHERE e->>'kind' = 'TransferOut'
         AND e ?& array['requestor', 'lpId', 'amount', 'amountDst', 'nativeAmountDst', 'transferId', 'bidId']
         AND e->>'chainId' ~ '^[0-9]+$' AND e->>'blockTimestamp' ~ '^[0-9]+$'
         AND e->>'sender' ~ '^0x[0-9a-fA-F]{40}$' AND e->>'receiver' ~ '^0x[0-9a-fA-F]{40}$'
         AND e->>'token' ~ '^0x[0-9a-fA-F]{40}$'
         AND e->>'dstChainId' ~ '^[0-9]+$' AND e->>'dstAddress' ~ '^[0-9]+$' AND e->>'tokenDst' ~ '^[0-9]+$'
         AND e->>'agreementReachedTime' ~ '^[0-9]+$' AND e->>'expectedSingleStepTime' ~ '^[0-9]+$'
         AND e->>'tolerantSingleStepTime' ~ '^[0-9]+$' AND e->>'earliestRefundTime' ~ '^[0-9]+$'
    ), keyed AS (
      SELECT ${key(`e->>'sender'`)} AS agreement_key, e FROM outs
      UNION ALL
      SELECT ${key(`e->>'receiver'`)}, e FROM outs WHERE lower(e->>'receiver') <> lower(e->>'sender')
    )
    INSERT INTO ${t.agreementLocks} (agreement_key, chain_id, transfer_id, bid_id, block_time)
    SELECT agreement_key, e->>'chainId', e->>'transferId', e->>'bidId', (e->>'blockTimestamp')::bigint FROM keyed
    ON CONFLICT DO NOTHING;
    DROP FUNCTION pg_temp.classifier_hex_to_dec(text);
  `;
}
