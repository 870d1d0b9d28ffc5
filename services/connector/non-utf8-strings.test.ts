import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { createLogger } from '../../shared/logging/logger.js';
import { reputationInterface } from '../../shared/otmoic/abi.js';
import { allTopics, chainEvents, decode, topicSpec } from '../../topics/index.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import type { EventBody, HeightUpdate } from './body-schema.js';
import { HeightStore } from './heights.js';
import { connectorMigrations } from './migrations.js';
import type { RpcReader } from './rpc-reader.js';
import {
  clearConnectorTables,
  goldenEventBody,
  TEST_REPUTATION_CONTRACT,
  TEST_SWAP_CONTRACT,
  testIngestor,
} from './test-harness.js';
import { notUtf8, transferOutLog } from '../../test/support/non-utf8-log.js';

/**
 * The contracts take any bytes for a `string` parameter (the ABI decoder checks no UTF-8): anyone can emit a
 * TransferOut whose requestor is not UTF-8 (a 1-wei transferOut), any DID owner a complaint with such a member.
 * Refused (400), its chunk was asked again through history and then read from the RPC, refused each time: the
 * chain's stream stopped there for good, with every swap event after it.
 */

/** A TransferOut body of `block` whose requestor is four bytes that are not UTF-8. */
function badTransferOut(block: number, logIndex = 0): EventBody {
  const body = goldenEventBody('TransferOut', block, logIndex);
  const log = transferOutLog('ZZZZ');
  return { ...body, event: { ...body.event, topics: log.topics, data: notUtf8(log.data, 'ZZZZ') } };
}

function badComplaint(block: number): EventBody {
  const body = goldenEventBody('TransferOut', block);
  const fragment = reputationInterface.getEvent('SubmitComplaint')!;
  const complaint = [
    9006n,
    1n,
    'YYYY',
    614n,
    2n,
    'tok',
    '1',
    '1',
    '0',
    'req',
    'lp-1',
    60n,
    60n,
    1n,
    1n,
    'us',
    'ls',
  ];
  const log = reputationInterface.encodeEventLog(fragment, ['0x' + '55'.repeat(32), complaint, 'bob.devnet']);
  return {
    ...body,
    type: 'Reputation',
    event: {
      ...body.event,
      address: TEST_REPUTATION_CONTRACT,
      topics: log.topics,
      data: notUtf8(log.data, 'YYYY'),
    },
  };
}

describe('connector: an event whose string is not UTF-8 (anyone can emit one)', () => {
  let db: TestDatabase;
  let bus: PostgresBus;
  let heights: HeightStore;
  const events = async () =>
    (
      await db.pool.query<{ value: string }>(
        `SELECT value FROM bus_messages WHERE topic = 'chain.events' ORDER BY "offset"`,
      )
    ).rows.map(
      (r) =>
        decode(chainEvents, {
          topic: 'chain.events',
          partition: 0,
          offset: 0n,
          key: '',
          value: r.value,
          headers: {},
          timestamp: new Date(),
        }).payload as Record<string, any>,
    );

  beforeAll(async () => {
    db = await createTestDatabase([connectorMigrations]);
    bus = new PostgresBus({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
    });
    await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 1)));
    heights = new HeightStore(db.pool);
  });
  beforeEach(async () => {
    await clearConnectorTables(db.pool);
    await heights.init('9006', 'swap', 10);
    await heights.init('9006', 'reputation', 10);
  });
  afterAll(async () => {
    await bus?.close();
    await db?.drop();
  });

  it('a chunk holding one is published, its bytes that are no UTF-8 read as U+FFFD, and the stream moves on', async () => {
    const { ingestor } = testIngestor({ pool: db.pool, bus, heights });
    const chunk = {
      type: 'update_height',
      height: 15,
      data: [badTransferOut(12), goldenEventBody('ConfirmOut', 13)],
    } as unknown as HeightUpdate;
    expect(await ingestor.heightUpdate('9006', 'swap', chunk)).toBe('processed');
    expect(await heights.get('9006', 'swap')).toBe(15);
    const published = await events();
    expect(published.map((e) => e.kind)).toEqual(['TransferOut', 'ConfirmOut']);
    expect(published[0]!.requestor).toBe('\uFFFD'.repeat(4));
    expect(published[0]!.lpId).toBe('lp-1');
  });

  it('a complaint with such a member, on the reputation stream', async () => {
    const { ingestor } = testIngestor({ pool: db.pool, bus, heights });
    const chunk = { type: 'update_height', height: 15, data: [badComplaint(12)] } as unknown as HeightUpdate;
    expect(await ingestor.heightUpdate('9006', 'reputation', chunk)).toBe('processed');
    const [complaint] = await events();
    expect(complaint!.kind).toBe('Complaint');
    expect(complaint!.complaint.srcToken).toBe('\uFFFD'.repeat(4));
    expect(complaint!.complainant).toBe('bob.devnet');
  });

  it('a gap holding one is read from the RPC and filled (it failed at every read, for ever)', async () => {
    const bad = badTransferOut(12);
    const rawLog = {
      ...bad.event,
      blockHash: '0x' + 'bb'.repeat(32),
      transactionIndex: '0x0',
      removed: false,
    };
    const rpc = {
      head: async () => 100,
      logs: async (from: number, to: number) =>
        Number(rawLog.blockNumber) >= from && Number(rawLog.blockNumber) <= to ? [rawLog] : [],
      block: async () => ({
        number: bad.block.number,
        timestamp: bad.block.timestamp,
        hash: rawLog.blockHash,
      }),
      receipt: async () => ({ from: bad.tx.from, transactionHash: bad.event.transactionHash }),
      blockByNumber: async (n: number) => ({ number: '0x' + n.toString(16), timestamp: '0x6553f100' }),
    } as unknown as RpcReader;
    const { ingestor } = testIngestor({ pool: db.pool, bus, heights, rpc: () => rpc });
    expect(await ingestor.fillFromRpc('9006', 'swap', 20, 100)).toBe(20);
    expect(await heights.get('9006', 'swap')).toBe(20);
    const published = await events();
    expect(published.map((e) => [e.kind, e.contract, e.requestor])).toEqual([
      ['TransferOut', TEST_SWAP_CONTRACT, '\uFFFD'.repeat(4)],
    ]);
  });
});
