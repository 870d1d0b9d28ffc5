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
  };
}

/** Every table of the projection (a replay's fresh schema, a test's). */
export function classifierDdl(t: ClassifierTables): string {
  return (
    swapProjectionDdl(t) + ignoredOutsDdl(t) + missingEventsDdl(t) + lockLinksDdl(t) + orphanExpiryDdl(t)
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
