import type { MigrationSet } from '../migrate.js';

/** Tables of the shared infrastructure: the postgres event log, consumer dedupe, the JSONB archive. */
export const coreMigrations: MigrationSet = {
  namespace: 'core',
  migrations: [
    {
      version: 1,
      name: 'postgres event log',
      sql: `
        CREATE TABLE bus_topics (
          topic text PRIMARY KEY,
          partitions int NOT NULL CHECK (partitions > 0),
          retention_ms bigint -- NULL: kept for ever
        );
        -- One row per partition: the next offset to hand out. Publishers lock this row, so offsets become
        -- visible in order and a consumer never skips a row committed late with a lower offset.
        CREATE TABLE bus_partitions (
          topic text NOT NULL REFERENCES bus_topics(topic),
          partition int NOT NULL,
          next_offset bigint NOT NULL DEFAULT 0,
          PRIMARY KEY (topic, partition)
        );
        CREATE TABLE bus_messages (
          topic text NOT NULL,
          partition int NOT NULL,
          "offset" bigint NOT NULL,
          key text NOT NULL,
          value text NOT NULL,
          headers jsonb NOT NULL DEFAULT '{}',
          created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
          PRIMARY KEY (topic, partition, "offset")
        );
        CREATE INDEX bus_messages_time ON bus_messages (topic, created_at);
        CREATE TABLE bus_group_offsets (
          group_id text NOT NULL,
          topic text NOT NULL,
          partition int NOT NULL,
          next_offset bigint NOT NULL,
          updated_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (group_id, topic, partition)
        );
        -- Members of a consumer group, for sharing partitions fairly. A member is alive while its control
        -- connection (pid, backend_start) is in pg_stat_activity: a member killed hard drops out at once.
        -- Ownership of a partition itself is a session advisory lock held by that connection.
        CREATE TABLE bus_group_members (
          group_id text NOT NULL,
          member_id text NOT NULL,
          pid int NOT NULL,
          backend_start timestamptz NOT NULL,
          PRIMARY KEY (group_id, member_id)
        );
      `,
    },
    {
      version: 2,
      name: 'consumer dedupe',
      sql: `
        -- Effects exactly once: a consumer records the event id in the same transaction as its effect.
        CREATE TABLE processed_events (
          consumer text NOT NULL,
          event_id text NOT NULL,
          processed_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (consumer, event_id)
        );
      `,
    },
    {
      version: 3,
      name: 'archive of raw chain documents',
      sql: `
        CREATE TABLE archive_documents (
          collection text NOT NULL,
          id text NOT NULL,
          seq bigserial NOT NULL,
          document jsonb NOT NULL,
          stored_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (collection, id)
        );
        CREATE INDEX archive_documents_seq ON archive_documents (collection, seq);
      `,
    },
    {
      version: 4,
      name: 'bus positions for kafka, persistent attempts, outbox',
      sql: `
        -- bus_group_offsets is the authoritative position of a group on both buses (Kafka's own commit is a
        -- hint). attempts counts delivery attempts of attempt_offset across restarts, so a message that
        -- crashes the process is dead-lettered after maxAttempts; a commit resets it.
        ALTER TABLE bus_group_offsets ADD COLUMN attempt_offset bigint, ADD COLUMN attempts int NOT NULL DEFAULT 0;
        -- Transactional outbox of the Kafka bus: publish(tx) writes here; a relay sends in id order, then deletes.
        CREATE TABLE bus_outbox (
          id bigserial PRIMARY KEY,
          topic text NOT NULL,
          key text NOT NULL,
          value text NOT NULL,
          headers jsonb NOT NULL DEFAULT '{}',
          created_at timestamptz NOT NULL DEFAULT now()
        );
      `,
    },
    {
      version: 5,
      name: 'batch attempts',
      sql: `
        -- A batch of consecutive messages counts one attempt at its first offset before it is tried whole;
        -- attempt_batch says the count includes that try, so the first message alone is not charged for it.
        ALTER TABLE bus_group_offsets ADD COLUMN attempt_batch boolean NOT NULL DEFAULT false;
      `,
    },
    {
      version: 6,
      name: 'archive documents as json text, uncompressed',
      sql: `
        -- The archive keeps documents as they were written: json stores the text verbatim (jsonb re-encoded
        -- every body, reordered keys and refused \\u0000), and nothing reads into a document in SQL. EXTERNAL
        -- skips pglz compression of every body (about 0.15 ms per 7 KB body on the Connector's write path) at
        -- the price of about 3x the archive's disk.
        ALTER TABLE archive_documents ALTER COLUMN document TYPE json USING document::json;
        ALTER TABLE archive_documents ALTER COLUMN document SET STORAGE EXTERNAL;
      `,
    },
    {
      version: 7,
      name: 'outbox rows the broker refused',
      sql: `
        -- Kafka outbox rows the broker refused for good (e.g. MESSAGE_TOO_LARGE): moved here so the rows
        -- after them go on; kept for the operator to inspect and redrive (README, Kafka specifics).
        CREATE TABLE bus_outbox_refused (
          id bigint PRIMARY KEY, -- the row's id in bus_outbox
          topic text NOT NULL,
          key text NOT NULL,
          value text NOT NULL,
          headers jsonb NOT NULL,
          created_at timestamptz NOT NULL,
          refused_at timestamptz NOT NULL DEFAULT now(),
          error text NOT NULL
        );
      `,
    },
    {
      version: 8,
      name: 'bus messages by time: a BRIN index',
      sql: `
        -- created_at only serves retention (prune) and seeking a partition by time, both over ranges of an
        -- append-only table whose rows arrive in time order: a BRIN index serves them at a fraction of a btree's
        -- cost on every publish (about 10 % more messages a second end to end, npm run bench -- bus).
        -- Ranges not yet summarised are always read, so no row is ever missed; autosummarize keeps them few.
        DROP INDEX bus_messages_time;
        CREATE INDEX bus_messages_time ON bus_messages USING brin (created_at) WITH (autosummarize = on);
      `,
    },
  ],
};
