/** Test support for the sender's job tables. Not used in production. */

/** An owner's job table with only the sender's columns (as the relay's and the Agent's have them), keyed by `job`. */
export const TEST_JOBS_TABLE = `
  CREATE TABLE test_jobs (
    job text PRIMARY KEY,
    status text NOT NULL,
    nonce bigint, raw_tx text, tx_hash text, txs jsonb NOT NULL DEFAULT '[]',
    reason text, attempts integer NOT NULL DEFAULT 0, refusals integer NOT NULL DEFAULT 0,
    mined_block bigint, cancel_reason text, block_number bigint, paid_failures integer NOT NULL DEFAULT 0,
    failures integer NOT NULL DEFAULT 0, updated_at timestamptz NOT NULL DEFAULT now()
  )`;
