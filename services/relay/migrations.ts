import type { MigrationSet } from '../../shared/db/migrate.js';

export const relayMigrations: MigrationSet = {
  namespace: 'relay',
  migrations: [
    {
      version: 1,
      name: 'behalf commands and the relay wallet nonce',
      sql: `
        -- One row per distinct command (id = hash of its canonical content): a repeat finds the row.
        -- A command owns at most one transaction: once raw_tx is set it is only ever re-broadcast.
        CREATE TABLE relay_commands (
          id text PRIMARY KEY,
          system_chain_id text NOT NULL,
          action text NOT NULL CHECK (action IN ('confirm_out', 'confirm_in', 'refund_out', 'refund_in')),
          transfer_id text NOT NULL,
          command jsonb NOT NULL,
          metadata jsonb NOT NULL DEFAULT '{}',
          status text NOT NULL CHECK (status IN ('accepted', 'scheduled', 'signed', 'sent', 'confirmed', 'failed')),
          window_start bigint NOT NULL,
          window_end bigint,
          reason text,
          nonce bigint,
          raw_tx text,
          tx_hash text,
          block_number bigint,
          attempts int NOT NULL DEFAULT 0,
          created_at timestamptz NOT NULL DEFAULT now(),
          updated_at timestamptz NOT NULL DEFAULT now(),
          CHECK ((raw_tx IS NULL) = (tx_hash IS NULL) AND (raw_tx IS NULL) = (nonce IS NULL))
        );
        CREATE INDEX relay_commands_open ON relay_commands (system_chain_id, window_start)
          WHERE status IN ('scheduled', 'signed', 'sent');
        CREATE INDEX relay_commands_transfer ON relay_commands (transfer_id);
        -- LOCAL_PADDING: the relay wallet's next nonce, allocated locally in the transaction that stores
        -- the signed transaction, so a restart never signs a second transaction with a used nonce.
        CREATE TABLE relay_nonces (
          chain_id bigint NOT NULL,
          address text NOT NULL,
          next_nonce bigint NOT NULL,
          PRIMARY KEY (chain_id, address)
        );
      `,
    },
  ],
};
