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

  it('keeps an ordinary document as BSON, for queries; one MongoDB cannot hold as JSON text', async () => {
    const db = `conformance_${randomBytes(4).toString('hex')}`;
    const archive = await MongoArchive.connect({ ...mongo.target!, db });
    const client = new MongoClient(mongoUrl({ ...mongo.target!, db }));
    try {
      await archive.putMany('chain-events', [
        { id: 'plain', document: { type: 'TransferOut', event_parse: { amount: '10' }, skip: undefined } },
        { id: 'odd', document: { event_parse: { 'a\u0000b': '1' } } },
      ]);
      const raw = client.db(db).collection<{ _id: string }>('archive.chain-events');
      expect(await raw.findOne({ 'document.event_parse.amount': '10' })).toMatchObject({
        _id: 'plain',
        document: { type: 'TransferOut', event_parse: { amount: '10' } },
      });
      expect(await raw.findOne({ _id: 'plain' }, { projection: { json: 1, 'document.skip': 1 } })).toEqual({
        _id: 'plain',
        document: {},
      });
      expect(await raw.findOne({ json: { $exists: true } })).toMatchObject({
        _id: 'odd',
        json: '{"event_parse":{"a\\u0000b":"1"}}',
      });
    } finally {
      await client.close();
      await archive.close();
    }
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
