import type { MigrationSet } from '../../shared/db/migrate.js';

export const chainClientMigrations: MigrationSet = {
  namespace: 'chain_client',
  migrations: [
    {
      version: 1,
      name: 'progress, registrations, delivery outbox',
      sql: `
        -- Last block whose events were turned into deliveries, per instance (system chain id).
        CREATE TABLE chain_client_progress (
          instance text PRIMARY KEY,
          last_block bigint NOT NULL,
          updated_at timestamptz NOT NULL DEFAULT now()
        );
        -- Registrations survive a restart (the original kept them in memory only).
        CREATE TABLE chain_client_registrations (
          id bigserial PRIMARY KEY,
          instance text NOT NULL,
          kind text NOT NULL CHECK (kind IN ('swap', 'reputation')),
          callback jsonb NOT NULL,
          merge boolean NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now(),
          UNIQUE (instance, kind, callback)
        );
        -- Every callback post, written in the same transaction that advances progress: nothing is lost
        -- between reading the chain and delivering. Bodies are kept as the exact JSON text sent.
        CREATE TABLE chain_client_deliveries (
          id bigserial PRIMARY KEY,
          instance text NOT NULL,
          -- Deliveries of one lane (a registration, or one history task) go out one at a time, in order.
          lane text NOT NULL,
          url text NOT NULL,
          body text NOT NULL,
          status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
          attempts int NOT NULL DEFAULT 0,
          next_attempt_at timestamptz NOT NULL DEFAULT now(),
          last_error text,
          created_at timestamptz NOT NULL DEFAULT now(),
          settled_at timestamptz
        );
        CREATE INDEX chain_client_deliveries_pending ON chain_client_deliveries (instance, lane, id) WHERE status = 'pending';
      `,
    },
    {
      version: 2,
      name: 'a registration is its callback and merge; settled posts pruned by age',
      sql: `
        -- As the original (its key hashes callbackUrl and merge): the same URLs with another merge are another
        -- registration, not "already registered" (which would keep the first one's body shape silently).
        ALTER TABLE chain_client_registrations
          DROP CONSTRAINT IF EXISTS chain_client_registrations_instance_kind_callback_key;
        ALTER TABLE chain_client_registrations ADD UNIQUE (instance, kind, callback, merge);
        -- Delivered and given-up posts are removed after chainClient.keepSettledDays (deliverer.ts).
        CREATE INDEX chain_client_deliveries_settled ON chain_client_deliveries (instance, settled_at)
          WHERE status <> 'pending';
      `,
    },
    {
      version: 3,
      name: 'history tasks survive errors and restarts',
      sql: `
        -- A history request until its last range is queued: each range's deliveries and the task's next block
        -- are written in one transaction, so an RPC error or a restart resumes the task where it stopped
        -- (the original ran it in memory and lost the rest). Removed once done.
        CREATE TABLE chain_client_history_tasks (
          id bigserial PRIMARY KEY,
          instance text NOT NULL,
          lane text NOT NULL,
          kind text NOT NULL CHECK (kind IN ('swap', 'reputation')),
          callback jsonb NOT NULL,
          merge boolean NOT NULL,
          next_block bigint NOT NULL,
          end_block bigint NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX chain_client_history_tasks_instance ON chain_client_history_tasks (instance, id);
      `,
    },
    {
      version: 4,
      name: 'a repeated history request is its running task; a range that never reads ends its task',
      sql: `
        -- An identical request (kind, callback, merge, start, end) while its task runs is that task: a client
        -- retrying after a lost answer got every chunk twice. So the range is kept, and a task whose ranges are
        -- all queued stays ('queued') until its posts are out. Tasks stored before did not keep their start: an
        -- identical request to one of them starts a new task.
        ALTER TABLE chain_client_history_tasks ADD COLUMN start_block bigint;
        UPDATE chain_client_history_tasks SET start_block = next_block;
        ALTER TABLE chain_client_history_tasks ALTER COLUMN start_block SET NOT NULL;
        ALTER TABLE chain_client_history_tasks
          ADD COLUMN state text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'queued'));
        -- Failed reads of the task's next range in a row, and when it is read again: after
        -- chainClient.historyAttempts the task is given up (a pruned node held its slot for ever).
        ALTER TABLE chain_client_history_tasks ADD COLUMN failures int NOT NULL DEFAULT 0;
        ALTER TABLE chain_client_history_tasks ADD COLUMN retry_at timestamptz NOT NULL DEFAULT now();
        ALTER TABLE chain_client_history_tasks ADD COLUMN last_error text;
      `,
    },
  ],
};
