import type { MigrationSet } from '../../shared/db/migrate.js';
import { classifierDdl, classifierTables } from './tables.js';

export const classifierMigrations: MigrationSet = {
  namespace: 'classifier',
  migrations: [
    {
      version: 1,
      name: 'swap projection, clocks, verdicts and violations',
      sql: classifierDdl(classifierTables()),
    },
  ],
};
