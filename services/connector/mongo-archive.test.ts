import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoArchive } from '../../shared/archive/mongodb-archive.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { announceSkip, mongoForTests } from '../../test/support/external.js';
import type { HeightStore } from './heights.js';
import { connectorMigrations } from './migrations.js';
import { goldenEventBody, startTestConnector } from './test-harness.js';

const mongo = mongoForTests();
if (mongo.skipReason) announceSkip('connector with the MongoDB archive', mongo.skipReason);

/**
 * The production profile's archive behind the Connector (the postgres log stands in for Kafka: any archive
 * but postgres takes the same path, one transaction a chunk with the archive written inside it). A chain
 * client's loose body may hold what BSON cannot: its chunk must be published and its body archived as it
 * came, not fail at every post and stop the stream.
 */
describe.skipIf(mongo.skipReason)('connector with the MongoDB archive', () => {
  let db: TestDatabase;
  let archive: MongoArchive;
  let app: FastifyInstance;
  let heights: HeightStore;
  let connector: Awaited<ReturnType<typeof startTestConnector>>;

  beforeAll(async () => {
    db = await createTestDatabase([connectorMigrations]);
    archive = await MongoArchive.connect({
      ...mongo.target!,
      db: `connector_${randomBytes(4).toString('hex')}`,
    });
    connector = await startTestConnector(db, { archive });
    ({ app, heights } = connector);
    await heights.init('9006', 'swap', 10);
  });
  afterAll(async () => {
    await connector?.close();
    await archive?.close();
    await db?.drop();
  });

  it('publishes a chunk whose body has a key holding U+0000, and archives that body unchanged', async () => {
    const odd = goldenEventBody('TransferOut', 12);
    const eventParse = { ...(odd.event_parse as object), 'a\u0000b': '1' };
    Object.assign(odd, { event_parse: eventParse });
    const plain = goldenEventBody('ConfirmOut', 13);
    const reply = await app.inject({
      method: 'POST',
      url: '/callback/9006/swap',
      payload: { type: 'update_height', height: 15, data: [odd, plain] },
      headers: { 'content-type': 'application/json' },
    });
    expect(reply.json()).toEqual({ code: 200, message: 'processed' });
    expect(await heights.get('9006', 'swap')).toBe(15);
    const { rows } = await db.pool.query<{ value: string }>(
      `SELECT value FROM bus_messages WHERE topic = 'chain.events' ORDER BY partition, "offset"`,
    );
    expect(rows.map((r) => JSON.parse(r.value).payload.kind).sort()).toEqual(['ConfirmOut', 'TransferOut']);
    const archived = await archive.list('chain-events');
    expect(archived.map((d) => d.document)).toEqual([
      JSON.parse(JSON.stringify(odd)),
      JSON.parse(JSON.stringify(plain)),
    ]);
    expect((archived[0]!.document as { event_parse: object }).event_parse).toEqual(eventParse);
  });
});
