import type { MigrationSet } from '../../shared/db/migrate.js';

export const notifierMigrations: MigrationSet = {
  namespace: 'notifier',
  migrations: [
    {
      version: 1,
      name: 'outbox of n8n notifications',
      sql: `
        -- One row per notification; id is deterministic (e.g. violation:<bid>), so a redelivered event or a
        -- restart never notifies twice. Rows are kept after delivery (delivered_at) as the record.
        CREATE TABLE notifier_outbox (
          id text PRIMARY KEY,
          kind text NOT NULL,
          payload jsonb NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now(),
          attempts int NOT NULL DEFAULT 0,
          next_attempt_at timestamptz NOT NULL DEFAULT now(),
          delivered_at timestamptz,
          last_error text
        );
        CREATE INDEX notifier_outbox_due ON notifier_outbox (next_attempt_at) WHERE delivered_at IS NULL;
      `,
    },
    {
      version: 2,
      name: 'delivered notifications by delivery time',
      sql: `
        -- For the hourly deletion of rows delivered over notifier.keepDeliveredDays ago (outbox.ts, prune).
        CREATE INDEX notifier_outbox_delivered ON notifier_outbox (delivered_at) WHERE delivered_at IS NOT NULL;
      `,
    },
  ],
};
