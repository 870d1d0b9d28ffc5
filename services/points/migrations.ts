import type { MigrationSet } from '../../shared/db/migrate.js';

/** Schema the live projections live in; a replay builds the same tables in a fresh schema beside it. */
export const LIVE_SCHEMA = 'public';

/**
 * The projection tables of Points inside `schema`. One function for the live migration and for replay, so a
 * replay's fresh tables are exactly the live ones. Never change the text for 'public' after it shipped: add a
 * migration instead (the migration checksum would refuse it).
 */
export function projectionTablesSql(schema: string): string {
  const s = quoteIdentifier(schema);
  return `
    -- One deduction per swap (a swap carries at most one violation), from the violations topic.
    CREATE TABLE ${s}.points_deductions (
      bid_id text PRIMARY KEY,
      party text NOT NULL CHECK (party IN ('user', 'lp')),
      subject text NOT NULL,
      arbitration_case smallint NOT NULL CHECK (arbitration_case BETWEEN 1 AND 7),
      src_chain_id text NOT NULL,
      dst_chain_id text,
      chain_id text NOT NULL,
      block_time bigint NOT NULL,
      rule text NOT NULL,
      tenths smallint NOT NULL CHECK (tenths > 0),
      transactions jsonb NOT NULL,
      event_id text NOT NULL
    );
    -- A score counts one subject's deductions in a time range; records page newest first: both are one
    -- index range scan (index-only for the count).
    CREATE INDEX points_deductions_subject_time
      ON ${s}.points_deductions (party, subject, block_time, bid_id);

    -- Every verdict as published (the complaint answer and the explanation of LP statistics).
    CREATE TABLE ${s}.points_verdicts (
      bid_id text PRIMARY KEY,
      outcome text NOT NULL,
      block_time bigint NOT NULL,
      verdict jsonb NOT NULL,
      event_id text NOT NULL
    );

    -- The swaps that count for an LP's tier: normal swaps and swaps the LP broke, by the verdict's block time.
    CREATE TABLE ${s}.points_lp_swaps (
      bid_id text PRIMARY KEY,
      lp_id text NOT NULL,
      block_time bigint NOT NULL,
      normal boolean NOT NULL,
      response_time_seconds bigint,
      CHECK (normal OR response_time_seconds IS NULL)
    );
    CREATE INDEX points_lp_swaps_lp_time
      ON ${s}.points_lp_swaps (lp_id, block_time) INCLUDE (normal, response_time_seconds);

    -- Complaints seen on chain (chain.events), so a complaint without a verdict yet can be shown as pending.
    CREATE TABLE ${s}.points_complaints (
      event_id text PRIMARY KEY,
      bid_id text NOT NULL,
      chain_id text NOT NULL,
      tx_hash text NOT NULL,
      block_number bigint NOT NULL,
      block_time bigint NOT NULL,
      complainant text NOT NULL,
      fields jsonb NOT NULL
    );
    CREATE INDEX points_complaints_bid ON ${s}.points_complaints (bid_id, block_time);
  `;
}

/**
 * The indexes of the reads that span every subject, by block time (the LP ranking, the dashboard's verdicts):
 * without them each is a sequential scan of its whole table. Live tables only: a replay's rebuild is compared
 * row by row and dropped, and writes faster without them.
 */
export function readIndexesSql(schema: string): string {
  const s = quoteIdentifier(schema);
  return `
    -- The ranking's swaps in the window: an index-only range scan. (Its LP violations need none of their own:
    -- points_deductions_subject_time holds party, subject and block_time, grouped by subject already.)
    CREATE INDEX points_lp_swaps_time
      ON ${s}.points_lp_swaps (block_time) INCLUDE (lp_id, normal, response_time_seconds);
    -- The dashboard's first and last verdict (two index probes) and its verdicts after since=.
    CREATE INDEX points_verdicts_time ON ${s}.points_verdicts (block_time);
  `;
}

export const pointsMigrations: MigrationSet = {
  namespace: 'points',
  migrations: [
    {
      version: 1,
      name: 'deductions, verdicts, LP swap statistics, complaints',
      sql: projectionTablesSql(LIVE_SCHEMA),
    },
    {
      version: 2,
      name: 'indexes by block time for the ranking and the dashboard',
      sql: readIndexesSql(LIVE_SCHEMA),
    },
    {
      version: 3,
      name: 'LP ids in their DID domain form, response times counted up to 2^32 s',
      // What projection.ts now writes (storedLpId; lpSwapOf, MAX_COUNTED_RESPONSE_SECONDS = 2^32), so a replay is identical to the rows kept. An id
      // stored shortened (`…#sha256:` of the whole id, over 1,000 bytes) cannot be recomputed without the whole
      // id and is left as it is.
      sql: `
        UPDATE ${quoteIdentifier(LIVE_SCHEMA)}.points_deductions SET subject = overlay(subject PLACING '.' FROM strpos(subject, '@') FOR 1)
          WHERE party = 'lp' AND strpos(subject, '@') > 0 AND strpos(subject, '…#sha256:') = 0;
        UPDATE ${quoteIdentifier(LIVE_SCHEMA)}.points_lp_swaps SET lp_id = overlay(lp_id PLACING '.' FROM strpos(lp_id, '@') FOR 1)
          WHERE strpos(lp_id, '@') > 0 AND strpos(lp_id, '…#sha256:') = 0;
        UPDATE ${quoteIdentifier(LIVE_SCHEMA)}.points_lp_swaps SET response_time_seconds = 4294967296 WHERE response_time_seconds > 4294967296;
      `,
    },
    {
      version: 4,
      name: 'LP ids with every @ read as .',
      // Migration 3 read the first `@` only; projection.ts now reads every one (lpKeyOf), so an id like `a@b@c`
      // is one key under both of its spellings and its stored form finds itself. Shortened ids are left as
      // they are, as in migration 3.
      sql: `
        UPDATE ${quoteIdentifier(LIVE_SCHEMA)}.points_deductions SET subject = replace(subject, '@', '.')
          WHERE party = 'lp' AND strpos(subject, '@') > 0 AND strpos(subject, '…#sha256:') = 0;
        UPDATE ${quoteIdentifier(LIVE_SCHEMA)}.points_lp_swaps SET lp_id = replace(lp_id, '@', '.')
          WHERE strpos(lp_id, '@') > 0 AND strpos(lp_id, '…#sha256:') = 0;
      `,
    },
  ],
};

/** The projection tables, for replay's comparison (each has the primary key bid_id or event_id). */
export const PROJECTION_TABLES = [
  { table: 'points_deductions', key: 'bid_id' },
  { table: 'points_verdicts', key: 'bid_id' },
  { table: 'points_lp_swaps', key: 'bid_id' },
  { table: 'points_complaints', key: 'event_id' },
] as const;

export function quoteIdentifier(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a plain SQL identifier: ${name}`);
  return `"${name}"`;
}
