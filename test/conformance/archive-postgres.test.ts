import { PostgresArchive } from '../../shared/archive/postgres-archive.js';
import { createTestDatabase } from '../support/database.js';
import { archiveConformanceSuite } from './archive.js';

archiveConformanceSuite('postgres (JSONB)', async () => {
  const db = await createTestDatabase();
  return { archive: new PostgresArchive(db.pool), cleanup: () => db.drop() };
});
