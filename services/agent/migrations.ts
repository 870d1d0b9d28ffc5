import type { MigrationSet } from '../../shared/db/migrate.js';
import { senderMigrations } from '../../shared/sender/nonces.js';

export const agentMigrations: MigrationSet = {
  namespace: 'agent',
  migrations: [
    {
      version: 1,
      name: 'complaints and their one transaction',
      sql: `
        -- One row per bid (the contract takes one complaint per bid): a repeat finds the row.
        -- Every transaction signed for it shares one nonce (speed-ups, the freeing self-transfer).
        CREATE TABLE agent_complaints (
          bid_id text PRIMARY KEY,
          complaint jsonb NOT NULL,
          signature text NOT NULL,
          domain text NOT NULL,
          signer text NOT NULL,
          status text NOT NULL
            CHECK (status IN ('accepted', 'scheduled', 'signed', 'sent', 'cancelling', 'confirmed', 'failed')),
          -- confirmed because the bid already had its complaint on chain (DuplicateBidId), not by our call
          already_on_chain boolean NOT NULL DEFAULT false,
          reason text,
          nonce bigint,
          raw_tx text,
          tx_hash text,
          block_number bigint,
          attempts int NOT NULL DEFAULT 0,
          txs jsonb NOT NULL DEFAULT '[]',
          refusals int NOT NULL DEFAULT 0,
          mined_block bigint,
          cancel_reason text,
          created_at timestamptz NOT NULL DEFAULT now(),
          updated_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX agent_complaints_open ON agent_complaints (created_at)
          WHERE status IN ('scheduled', 'signed', 'sent', 'cancelling');
      `,
    },
    {
      version: 2,
      name: 'complaints replaced after failing',
      sql: `
        -- A failed complaint replaced by another complainant's (store.ts, accept): what the replaced ones were
        -- (signer, domain, reason, transactions), oldest first, for audit.
        ALTER TABLE agent_complaints ADD COLUMN history jsonb NOT NULL DEFAULT '[]';
      `,
    },
    {
      version: 3,
      name: 'complaint transactions that were mined and failed',
      sql: `
        -- Gas paid for nothing by the complainant's DID domain on this bid before its complaint's last re-open
        -- or replacement (store.ts, accept): past agent.maxPaidFailures the Agent sends it no more.
        ALTER TABLE agent_complaints ADD COLUMN paid_failures int NOT NULL DEFAULT 0;
      `,
    },
    {
      version: 4,
      name: 'failures of a complaint, re-opens and replacements included',
      sql: `
        -- Every time the complaint's submission failed (JobTable.finish), never reset: the agent_job_failures
        -- gauge, whose total names the notifier's submission_failed alerts. One already failed counts once.
        ALTER TABLE agent_complaints ADD COLUMN failures int NOT NULL DEFAULT 0;
        UPDATE agent_complaints SET failures = 1 WHERE status = 'failed';
      `,
    },
  ],
};

/** The Agent's database: the shared sender's nonces, then its complaints. */
export const agentMigrationSets: readonly MigrationSet[] = [senderMigrations, agentMigrations];
