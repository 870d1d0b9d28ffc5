import type { MigrationSet } from '../../shared/db/migrate.js';

export const connectorMigrations: MigrationSet = {
  namespace: 'connector',
  migrations: [
    {
      version: 1,
      name: 'processed heights per chain and stream',
      sql: `
        -- Last block whose events are published, per chain and stream (swap contract / reputation contract).
        -- Moved only in the transaction that publishes the events (compare-and-set on the old value).
        CREATE TABLE connector_heights (
          chain_id text NOT NULL,
          stream text NOT NULL CHECK (stream IN ('swap', 'reputation')),
          height bigint NOT NULL,
          updated_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (chain_id, stream)
        );
      `,
    },
    {
      version: 2,
      name: 'last published event per chain and stream',
      sql: `
        -- Envelope id of the last chain.events message published for the stream: each chain.heights message
        -- names it, so a consumer can tell when it has seen every event of the chunk (topics are not ordered
        -- with each other).
        ALTER TABLE connector_heights ADD COLUMN last_event_id text;
      `,
    },
    {
      version: 3,
      name: 'single events held until their height update',
      sql: `
        -- Events posted one by one (history without merge) wait here until the update_height of their chunk
        -- (or a gap fill) processes that chunk: then they are published in block order with the chunk, once,
        -- and removed in the same transaction.
        CREATE TABLE connector_pending_events (
          chain_id text NOT NULL,
          stream text NOT NULL,
          event_id text NOT NULL,
          block_number bigint NOT NULL,
          body jsonb NOT NULL,
          received_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (chain_id, stream, event_id)
        );
      `,
    },
    {
      version: 4,
      name: 'held event bodies kept as sent',
      sql: `
        -- json, not jsonb: a chain's strings may hold U+0000, which jsonb refuses, and a held event that cannot
        -- be stored is a 500 its chain client retries and then gives up on (the event lost). The bodies are only
        -- stored and read back whole.
        ALTER TABLE connector_pending_events ALTER COLUMN body TYPE json USING body::json;
      `,
    },
    {
      version: 5,
      name: 'live starts shared by every process',
      sql: `
        -- The Connector processes (one per registration loop) whose registration a chain client may have taken as
        -- new since the stream's last live chunk: that chain client's live delivery restarts at the block after its
        -- head, mid-chunk, so the next live chunk, whichever process it reaches, is asked through history. Kept
        -- here, not in each process's memory: with two processes on the database, the one answered 30209 "already
        -- registered" took the first chunk whole and skipped the blocks before the chain client's head.
        ALTER TABLE connector_heights ADD COLUMN live_start text[] NOT NULL DEFAULT '{}';
      `,
    },
  ],
};
