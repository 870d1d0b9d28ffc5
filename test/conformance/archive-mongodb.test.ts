import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { MongoArchive, mongoUrl } from '../../shared/archive/mongodb-archive.js';
import { announceSkip, mongoForTests } from '../support/external.js';
import { archiveConformanceSuite } from './archive.js';

const mongo = mongoForTests();
if (mongo.skipReason) announceSkip('Archive conformance: mongodb', mongo.skipReason);

archiveConformanceSuite(
  `mongodb${mongo.skipReason ? ` (skipped: ${mongo.skipReason})` : ''}`,
  async () => {
    const archive = await MongoArchive.connect({
      ...mongo.target!,
      db: `conformance_${randomBytes(4).toString('hex')}`,
    });
    return { archive, cleanup: () => archive.close() };
  },
  { skip: mongo.skipReason },
);

describe.skipIf(mongo.skipReason)('MongoDB archive specifics', () => {
  it('connects directly to the named server (no replica-set discovery)', () => {
    const url = new URL(mongoUrl({ host: 'db.internal', port: 27_017, db: 'x' }));
    expect(url.searchParams.get('directConnection')).toBe('true');
  });

  it('indexes a collection by seq, the order list() pages by', async () => {
    const db = `conformance_${randomBytes(4).toString('hex')}`;
    const archive = await MongoArchive.connect({ ...mongo.target!, db });
    const client = new MongoClient(mongoUrl({ ...mongo.target!, db }));
    try {
      await archive.put('blocks', 'b1', { height: 1 });
      const indexes = await client.db(db).collection('archive.blocks').listIndexes().toArray();
      expect(indexes.map((i) => i.key)).toContainEqual({ seq: 1 });
    } finally {
      await client.close();
      await archive.close();
    }
  });
});
