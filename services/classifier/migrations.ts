import type { MigrationSet } from '../../shared/db/migrate.js';
import { SIGNER_MEMO } from './signer-memo.js';
import {
  agreementLocksBackfill,
  agreementLocksDdl,
  classifierTables,
  ignoredOutsDdl,
  lockLinksDdl,
  missingEventsDdl,
  orphanExpiryDdl,
  swapProjectionDdl,
} from './tables.js';

export const classifierMigrations: MigrationSet = {
  namespace: 'classifier',
  migrations: [
    {
      version: 1,
      name: 'swap projection, clocks, verdicts and violations',
      sql: swapProjectionDdl(classifierTables()),
    },
    {
      version: 2,
      name: 'recovered signers',
      sql: `
        -- The signer each (chain, signature, message) recovers to (consent.ts): cryptography, not a rule, so a
        -- replay after a rule change may reuse it. key: SHA-256 of the inputs; signer null: recovers nobody.
        CREATE TABLE ${SIGNER_MEMO} (key text PRIMARY KEY, signer text);
      `,
    },
    {
      version: 3,
      name: 'ignored TransferOuts',
      sql: ignoredOutsDdl(classifierTables()),
    },
    {
      version: 4,
      name: 'dead-lettered chain events',
      sql: missingEventsDdl(classifierTables()),
    },
    {
      version: 5,
      name: 'links to another lock of the agreement told apart from links to TransferIns',
      sql: lockLinksDdl(classifierTables()),
    },
    {
      version: 6,
      name: 'orphans expire once nothing can adopt them',
      sql: orphanExpiryDdl(classifierTables()),
    },
    {
      version: 7,
      name: 'recovered signers keyed per agreement and version',
      sql: `
        -- consent.ts keys the memo by agreement, chain and signature, plus a tag per version of the Message
        -- (memoKeyOf, versionTag); the keys of the per-message format are never read again. A cache: what is
        -- dropped is recovered again when needed.
        DELETE FROM ${SIGNER_MEMO};
      `,
    },
    {
      version: 8,
      name: 'the locks of each agreement under any of its bids',
      sql: agreementLocksDdl(classifierTables()) + agreementLocksBackfill(classifierTables()),
    },
  ],
};
