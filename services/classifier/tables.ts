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
  };
}

export function classifierDdl(t: ClassifierTables): string {
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
