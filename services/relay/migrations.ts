import type { MigrationSet } from '../../shared/db/migrate.js';
import { senderMigrations } from '../../shared/sender/nonces.js';

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
    {
      version: 2,
      name: 'one command per action and transfer; replacements at one nonce; shared sender nonces',
      sql: `
        -- Needs the 'sender' migrations (sender_nonces) applied first.
        ALTER TABLE relay_commands DROP CONSTRAINT relay_commands_status_check;
        ALTER TABLE relay_commands ADD CONSTRAINT relay_commands_status_check
          CHECK (status IN ('accepted', 'scheduled', 'signed', 'sent', 'cancelling', 'confirmed', 'failed'));
        -- Every transaction signed for the command, all at its one nonce (speed-ups and the freeing
        -- self-transfer); raw_tx / tx_hash keep the latest, or the one that was mined.
        ALTER TABLE relay_commands
          ADD COLUMN txs jsonb NOT NULL DEFAULT '[]',
          ADD COLUMN refusals int NOT NULL DEFAULT 0,
          ADD COLUMN mined_block bigint,
          ADD COLUMN cancel_reason text;
        CREATE INDEX relay_commands_by_transfer ON relay_commands (system_chain_id, action, transfer_id);
        DROP INDEX relay_commands_open;
        CREATE INDEX relay_commands_open ON relay_commands (system_chain_id, window_start)
          WHERE status IN ('scheduled', 'signed', 'sent', 'cancelling');
        INSERT INTO sender_nonces (chain_id, address, next_nonce)
          SELECT chain_id, address, next_nonce FROM relay_nonces
          ON CONFLICT (chain_id, address) DO UPDATE
            SET next_nonce = GREATEST(sender_nonces.next_nonce, EXCLUDED.next_nonce);
        DROP TABLE relay_nonces;
        -- register_relay: the relay server's callback URLs (the latest registration per deployment).
        CREATE TABLE relay_registrations (
          system_chain_id text PRIMARY KEY,
          callbacks jsonb NOT NULL,
          registered_at timestamptz NOT NULL DEFAULT now()
        );
      `,
    },
    {
      version: 3,
      name: 'transactions of a command that were mined and failed',
      sql: `
        -- Gas paid for nothing, kept across re-opens: a re-post of a command whose transactions were mined and
        -- failed this many times (relay.maxPaidFailures) is refused instead of re-opened.
        ALTER TABLE relay_commands ADD COLUMN paid_failures int NOT NULL DEFAULT 0;
      `,
    },
    {
      version: 4,
      name: 'failures of a command, re-opens included',
      sql: `
        -- Every time the command failed (JobTable.finish), never reset: the relay_job_failures gauge, whose
        -- total names the notifier's submission_failed alerts. A command already failed counts once.
        ALTER TABLE relay_commands ADD COLUMN failures int NOT NULL DEFAULT 0;
        UPDATE relay_commands SET failures = 1 WHERE status = 'failed';
      `,
    },
    {
      version: 5,
      name: 'callback URLs the chain client holds',
      sql: `
        -- The set last handed to the chain client (registration-forwarder.ts): a different set replaces it there,
        -- whenever it is handed over (at register_relay, or later when the chain client was down then).
        ALTER TABLE relay_registrations ADD COLUMN forwarded jsonb;
      `,
    },
    {
      version: 6,
      name: 'the deployment (EVM chain and contract) that owns the commands of a system chain id',
      sql: `
        -- One deployment per system chain id in a database: a relay for another contract or EVM chain under the
        -- same systemChainId is refused at start (CommandStore.claimDeployment), since each would otherwise send
        -- the other's commands to its own contract. contract_addr is lowercase.
        CREATE TABLE relay_deployments (
          system_chain_id text PRIMARY KEY,
          chain_id bigint NOT NULL,
          contract_addr text NOT NULL,
          claimed_at timestamptz NOT NULL DEFAULT now()
        );
        -- Each command's deployment. NULL: stored before this migration; the deployment that claims its
        -- system chain id adopts it at start.
        ALTER TABLE relay_commands ADD COLUMN chain_id bigint, ADD COLUMN contract_addr text;
      `,
    },
  ],
};

/** What the relay's database needs, in order: the shared sender's nonces, then the relay's tables. */
export const relayMigrationSets: readonly MigrationSet[] = [senderMigrations, relayMigrations];
