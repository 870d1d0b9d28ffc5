import { randomBytes } from 'node:crypto';
import { MongoArchive } from '../../shared/archive/mongodb-archive.js';
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
