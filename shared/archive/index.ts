export type { Archive, ArchivedDocument } from './port.js';
export { PostgresArchive } from './postgres-archive.js';
