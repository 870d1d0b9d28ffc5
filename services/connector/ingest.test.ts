import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { chainEvents, decode } from '../../topics/index.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import type { HeightStore } from './heights.js';
import { connectorMigrations } from './migrations.js';
import { RpcAnswerError } from './rpc-reader.js';
import { CALLBACK_KEYS, swapInterface } from '../../shared/otmoic/abi.js';
import { chunksOf, planChunk } from '../chain-client/delivery-plan.js';
import type { EventBody as ChainClientBody } from '../chain-client/event-body.js';
import {
  clearConnectorTables,
  startTestConnector,
  TEST_SWAP_CONTRACT,
  testBlockTimestamp,
} from './test-harness.js';
import { openApiValidator } from '../../test/support/openapi-validator.js';

const vectors = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../../test/fixtures/otmoic-relay.json'), 'utf8'),
);
const transferOutVector = vectors.events.find((v: { type?: string }) => v.type === 'TransferOut');
const confirmOutVector = vectors.events.find((v: { type?: string }) => v.type === 'ConfirmOut');

const CONTRACT = TEST_SWAP_CONTRACT;
const SENDER = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';

/** A chain-client body in the original's exact shape, around a golden log. */
function originalBody(vector: any, block: number, logIndex = 0, overrides: Record<string, unknown> = {}) {
  const event = {
    address: CONTRACT,
    topics: [vector.topic0],
    data: vector.log_data,
    blockNumber: '0x' + block.toString(16),
    transactionHash: '0x' + (block * 1000 + logIndex).toString(16).padStart(64, '0'),
    transactionIndex: '0x0',
    blockHash: '0x' + 'bb'.repeat(32),
    logIndex: '0x' + logIndex.toString(16),
    removed: false,
  };
  return {
    event,
    tx: { from: SENDER, to: CONTRACT, transactionHash: event.transactionHash, status: '0x1', logs: [event] },
    eventParse: vector.event_parse,
    block: {
      number: event.blockNumber,
      timestamp: '0x' + (1_700_000_100 + block).toString(16),
      hash: event.blockHash,
    },
    type: vector.type,
    transfer_info: JSON.stringify({}),
    event_raw: JSON.stringify(event),
    event_parse: vector.event_parse,
    chain_id: '9006',
    ...overrides,
  };
}

describe('connector callbacks: original bodies in, chain.events out', () => {
  let db: TestDatabase;
  let bus: PostgresBus;
  let app: FastifyInstance;
  let heights: HeightStore;
  const backfills: Array<[string, number, number]> = [];
  let connector: Awaited<ReturnType<typeof startTestConnector>>;
  /** What the RPC's block time read throws (undefined: it answers; 'hang': it never answers). */
  let blockTimeFailure: Error | 'hang' | undefined;
  let blockTimeReads = 0;
  /** After a failed read, the next is tried this much later (the Ingestor's back-off, shortened). */
  const RETRY_MS = 1_000;
  const DEADLINE_MS = 300;

  const post = (path: string, body: unknown) =>
    app.inject({
      method: 'POST',
      url: path,
      payload: body as object,
      headers: { 'content-type': 'application/json' },
    });
  const published = async () => {
    const { rows } = await db.pool.query<{ value: string }>(
      `SELECT value FROM bus_messages WHERE topic = 'chain.events' ORDER BY partition, "offset"`,
    );
    return rows.map((r) =>
      decode(chainEvents, {
        topic: 'chain.events',
        partition: 0,
        offset: 0n,
        key: '',
        value: r.value,
        headers: {},
        timestamp: new Date(),
      }),
    );
  };

  beforeAll(async () => {
    db = await createTestDatabase([connectorMigrations]);
    connector = await startTestConnector(db, {
      requestBackfill: (chain, _stream, stored, height) => void backfills.push([chain, stored, height]),
      blockTimestamp: async (_chain, height) => {
        blockTimeReads++;
        if (blockTimeFailure === 'hang') return new Promise<never>(() => undefined);
        if (blockTimeFailure) throw blockTimeFailure;
        return testBlockTimestamp(height);
      },
      limits: { blockTimeRetryMs: RETRY_MS, blockTimeDeadlineMs: DEADLINE_MS },
    });
    ({ app, bus, heights } = connector);
  });
  beforeEach(async () => {
    await clearConnectorTables(db.pool);
    await heights.init('9006', 'swap', 10);
    backfills.length = 0;
    blockTimeFailure = undefined;
  });
  afterAll(async () => {
    await connector?.close();
    await db?.drop();
  });

  it('accepts the original update_height body and publishes the golden event exactly', async () => {
    const body = {
      type: 'update_height',
      height: 15,
      data: [originalBody(transferOutVector, 12), originalBody(confirmOutVector, 14)],
    };
    const reply = await post('/callback/9006/swap', body);
    expect(reply.statusCode, reply.body).toBe(200);
    expect(reply.json()).toEqual({ code: 200, message: 'processed' });
    const events = await published();
    expect(events.map((e) => e.payload.kind)).toEqual(['TransferOut', 'ConfirmOut']);
    const out = events[0]!.payload;
    const golden = transferOutVector.event_parse;
    expect(out).toMatchObject({
      chainId: '9006',
      blockNumber: 12,
      blockTimestamp: 1_700_000_112,
      transferId: golden.transferId,
      sender: golden.sender,
      receiver: golden.receiver,
      token: golden.token,
      amount: golden.amount,
      hashlock: golden.hashlock,
      dstChainId: golden.dstChainId,
      dstAddress: golden.dstAddress,
      bidId: golden.bidId,
      tokenDst: golden.tokenDst,
      amountDst: golden.amountDst,
      agreementReachedTime: golden.agreementReachedTime,
      earliestRefundTime: golden.earliestRefundTime,
      requestor: golden.requestor,
      lpId: golden.lpId,
      txFrom: SENDER,
    });
    expect(events[0]!.id).toBe(`9006:${out.txHash}:0`);
    expect(events[1]!.payload).toMatchObject({
      kind: 'ConfirmOut',
      preimage: confirmOutVector.event_parse.preimage,
    });
    expect(await heights.get('9006', 'swap')).toBe(15);
    // The raw body is archived as it came.
    const { rows } = await db.pool.query(
      `SELECT document FROM archive_documents WHERE collection = 'chain-events' ORDER BY seq`,
    );
    expect(rows[0].document).toEqual(body.data[0]);
    // A heartbeat height for the classifier's clock.
    const { rows: heightRows } = await db.pool.query(
      `SELECT value FROM bus_messages WHERE topic = 'chain.heights'`,
    );
    expect(JSON.parse(heightRows[0].value).payload).toEqual({
      chainId: '9006',
      stream: 'swap',
      height: 15,
      blockTimestamp: 1_700_000_115,
      // The last event of the chunk: a consumer takes this height as the chain's clock only after it.
      lastEventId: events[1]!.id,
    });
  });

  it('is idempotent under the chain client retries: a repeated chunk publishes nothing more', async () => {
    const body = { type: 'update_height', height: 15, data: [originalBody(transferOutVector, 12)] };
    expect((await post('/callback/9006/swap', body)).json().message).toBe('processed');
    expect((await post('/callback/9006/swap', body)).json()).toEqual({
      code: 200,
      message: 'already processed',
    });
    expect(await published()).toHaveLength(1);
  });

  it('does not publish past a gap: it asks for history and keeps the height', async () => {
    const reply = await post('/callback/9006/swap', {
      type: 'update_height',
      height: 30,
      data: [originalBody(transferOutVector, 28)],
    });
    expect(reply.json()).toEqual({ code: 200, message: 'gap: backfill requested' });
    expect(backfills).toEqual([['9006', 10, 30]]);
    expect(await published()).toHaveLength(0);
    expect(await heights.get('9006', 'swap')).toBe(10);
    // Heartbeats (no data) advance the height when contiguous.
    expect(
      (await post('/callback/9006/swap', { type: 'update_height', height: 15, data: [] })).json().message,
    ).toBe('processed');
    expect(await heights.get('9006', 'swap')).toBe(15);
  });

  it('an RPC outage does not stop the stream: chunks go on without their height message until block times read again', async () => {
    const heightMessages = async () =>
      (
        await db.pool.query<{ value: string }>(
          `SELECT value FROM bus_messages WHERE topic = 'chain.heights' ORDER BY "offset"`,
        )
      ).rows.map((r) => JSON.parse(r.value).payload);
    const unread = async () =>
      (await connector.registry.getSingleMetric('connector_block_time_unread_total')!.get()).values.find(
        (v) => v.labels.chain === '9006',
      )?.value ?? 0;
    const before = await unread();
    blockTimeFailure = new RpcAnswerError('rpc-urls.97: eth_getBlockByNumber failed: connection refused');
    // Its last block (15) holds no event: its time would be read from the RPC.
    const chunk = { type: 'update_height', height: 15, data: [originalBody(transferOutVector, 12)] };
    const reply = await post('/callback/9006/swap', chunk);
    expect(reply.json()).toEqual({ code: 200, message: 'processed' });
    const events = await published();
    expect(events.map((e) => e.payload.kind)).toEqual(['TransferOut']);
    expect(await heights.get('9006', 'swap')).toBe(15);
    // No height without its block time: the classifier's clock does not move on a guess.
    expect(await heightMessages()).toEqual([]);
    // A chunk whose last block holds an event carries its own time.
    expect(
      (
        await post('/callback/9006/swap', {
          type: 'update_height',
          height: 20,
          data: [originalBody(confirmOutVector, 20)],
        })
      ).json().message,
    ).toBe('processed');
    const [withEvent] = await heightMessages();
    expect(withEvent).toMatchObject({ height: 20, blockTimestamp: 1_700_000_120 });
    expect(await unread()).toBe(before + 1);
    // The RPC answers again, but the next read waits for the back-off: until then chunks go on unread.
    blockTimeFailure = undefined;
    const reads = blockTimeReads;
    expect((await post('/callback/9006/swap', { type: 'update_height', height: 25 })).json().message).toBe(
      'processed',
    );
    expect(blockTimeReads).toBe(reads);
    expect(await heightMessages()).toHaveLength(1);
    expect(await unread()).toBe(before + 2);
    // After it, heights of empty blocks are published again, naming the stream's last event.
    await sleep(RETRY_MS);
    expect((await post('/callback/9006/swap', { type: 'update_height', height: 30 })).json().message).toBe(
      'processed',
    );
    const all = await published();
    expect((await heightMessages()).at(-1)).toEqual({
      chainId: '9006',
      stream: 'swap',
      height: 30,
      blockTimestamp: testBlockTimestamp(30),
      lastEventId: all.at(-1)!.id,
    });
    expect(await unread()).toBe(before + 2);
  });

  it('a hung RPC holds a chunk for the deadline only, and the following chunks not at all until the back-off ends', async () => {
    blockTimeFailure = 'hang';
    let started = performance.now();
    expect((await post('/callback/9006/swap', { type: 'update_height', height: 15 })).json().message).toBe(
      'processed',
    );
    const first = performance.now() - started;
    expect(first).toBeGreaterThanOrEqual(DEADLINE_MS - 5);
    expect(first).toBeLessThan(RETRY_MS);
    const reads = blockTimeReads;
    started = performance.now();
    for (const height of [20, 25]) {
      expect((await post('/callback/9006/swap', { type: 'update_height', height })).json().message).toBe(
        'processed',
      );
    }
    expect(performance.now() - started).toBeLessThan(DEADLINE_MS);
    expect(blockTimeReads).toBe(reads);
    expect(await heights.get('9006', 'swap')).toBe(25);
    // The RPC is back: after the back-off the next chunk reads its time.
    blockTimeFailure = undefined;
    await sleep(RETRY_MS);
    expect((await post('/callback/9006/swap', { type: 'update_height', height: 30 })).json().message).toBe(
      'processed',
    );
    expect(blockTimeReads).toBe(reads + 1);
  });

  it('a block time read that fails for any other reason fails the chunk and changes nothing', async () => {
    blockTimeFailure = new TypeError('a bug');
    const reply = await post('/callback/9006/swap', {
      type: 'update_height',
      height: 15,
      data: [originalBody(transferOutVector, 12)],
    });
    expect(reply.statusCode).toBe(500);
    expect(await published()).toHaveLength(0);
    expect(await heights.get('9006', 'swap')).toBe(10);
  });

  it('after a registration the chain client took as new, its first chunk is asked again through history', async () => {
    // A restarted chain client delivers live from the block after its head (here 13): its first chunk, height
    // 15, holds blocks 13 to 15 only; the event of block 12 is in no chunk it will post live.
    await connector.ingestor.liveStarting('9006', 'swap');
    const live = { type: 'update_height', height: 15, data: [originalBody(confirmOutVector, 14)] };
    expect((await post('/callback/9006/swap', live)).json()).toEqual({
      code: 200,
      message: 'gap: backfill requested',
    });
    expect(backfills).toEqual([['9006', 10, 15]]);
    expect(await published()).toHaveLength(0);
    expect(await heights.get('9006', 'swap')).toBe(10);
    // History delivers the whole chunk; the next live chunks are whole and taken as they come.
    const history = {
      type: 'update_height',
      height: 15,
      data: [originalBody(transferOutVector, 12), originalBody(confirmOutVector, 14)],
    };
    expect((await post('/callback/9006/swap', history)).json().message).toBe('processed');
    expect((await post('/callback/9006/swap', { type: 'update_height', height: 20 })).json().message).toBe(
      'processed',
    );
    expect((await published()).map((e) => e.payload.blockNumber)).toEqual([12, 14]);
    expect(backfills).toHaveLength(1);
  });

  it('keeps that mark when the first chunk fails before it is taken: its retry is asked again through history', async () => {
    await connector.ingestor.liveStarting('9006', 'swap');
    const original = heights.chunkState.bind(heights);
    heights.chunkState = async () => {
      heights.chunkState = original;
      throw new Error('the database went away');
    };
    const live = { type: 'update_height', height: 15, data: [originalBody(confirmOutVector, 14)] };
    expect((await post('/callback/9006/swap', live)).statusCode).toBe(500);
    expect((await post('/callback/9006/swap', live)).json()).toEqual({
      code: 200,
      message: 'gap: backfill requested',
    });
    expect(backfills).toEqual([['9006', 10, 15]]);
    expect(await heights.get('9006', 'swap')).toBe(10);
  });

  it('a history chunk (its URL marked source=history) is taken as it comes, and leaves the mark to the live chunk', async () => {
    await connector.ingestor.liveStarting('9006', 'swap');
    const history = { type: 'update_height', height: 15, data: [originalBody(transferOutVector, 12)] };
    expect((await post('/callback/9006/swap?source=history', history)).json().message).toBe('processed');
    // The restarted chain client's first live chunk is still asked again through history.
    const live = { type: 'update_height', height: 20, data: [originalBody(confirmOutVector, 19)] };
    expect((await post('/callback/9006/swap', live)).json().message).toBe('gap: backfill requested');
    expect(backfills).toEqual([['9006', 15, 20]]);
    // Any other source is refused, and changes nothing.
    const refused = await post('/callback/9006/swap?source=live', live);
    expect(refused.statusCode).toBe(400);
    expect(refused.json().message).toMatch(/source may only be "history"/);
    const badFrom = await post('/callback/9006/swap?source=history&from=-3', live);
    expect(badFrom.statusCode).toBe(400);
    expect(badFrom.json().message).toMatch(/from must be a block number/);
    expect(await heights.get('9006', 'swap')).toBe(15);
  });

  it('a registration the chain client already had changes nothing: its next chunk is taken', async () => {
    await connector.ingestor.liveStarting('9006', 'swap');
    await connector.ingestor.liveContinues('9006', 'swap');
    const live = { type: 'update_height', height: 15, data: [originalBody(transferOutVector, 12)] };
    expect((await post('/callback/9006/swap', live)).json().message).toBe('processed');
    expect(backfills).toEqual([]);
  });

  it('holds single event posts (history without merge) until their height: doubled and out of order, each published once in block order', async () => {
    const confirm = originalBody(confirmOutVector, 14);
    const transfer = originalBody(transferOutVector, 12);
    const ahead = originalBody(transferOutVector, 17, 1);
    // Out of order, one twice, one of a later chunk: nothing is published before its height.
    for (const body of [confirm, ahead, transfer, confirm])
      expect((await post('/callback/9006/swap', body)).json().message).toBe('held until its height update');
    expect(await published()).toHaveLength(0);
    expect((await post('/callback/9006/swap', { type: 'update_height', height: 15 })).json().message).toBe(
      'processed',
    );
    const events = await published();
    expect(events.map((e) => [e.payload.kind, e.payload.blockNumber])).toEqual([
      ['TransferOut', 12],
      ['ConfirmOut', 14],
    ]);
    const { rows: heightRows } = await db.pool.query(
      `SELECT value FROM bus_messages WHERE topic = 'chain.heights'`,
    );
    expect(JSON.parse(heightRows[0].value).payload.lastEventId).toBe(events[1]!.id);
    // A late repeat of a processed event changes nothing; the held one of block 17 comes with height 20.
    expect((await post('/callback/9006/swap', transfer)).json().message).toBe('already processed');
    expect((await post('/callback/9006/swap', { type: 'update_height', height: 20 })).json().message).toBe(
      'processed',
    );
    expect((await published()).map((e) => e.payload.blockNumber)).toEqual([12, 14, 17]);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM connector_pending_events`);
    expect(rows[0].n).toBe(0);
  });

  describe('chunk boundaries: every event once, whatever chunks a chain client posts', () => {
    // Our chain client splits a history range start…end into chunks ending at multiples of 5, its first from
    // `start` (mid-chunk) and its last at `end` (a non-multiple of 5). The original aligns a history's start
    // down to a multiple of 5 and posts buckets of 5 ending at multiples of 5 (heights rounded up); it never
    // posts its last bucket (spec/otmoic.md §4; chainclient-evm ApiSupport.watchHeight).
    const HISTORY_URL = '/callback/9006/swap?source=history';
    const historyCallbacks = Object.fromEntries(
      [...Object.values(CALLBACK_KEYS), 'on_height_update'].map((key) => [key, HISTORY_URL]),
    );
    type Body = ReturnType<typeof originalBody>;
    /** One event per listed block (log index = position, so two in one block are two logs). */
    const eventsAt = (...blocks: number[]): Body[] =>
      blocks.map((b, i) => originalBody(i % 2 ? confirmOutVector : transferOutVector, b, i));
    const inRange = (events: Body[], from: number, to: number) =>
      events.filter((e) => Number(e.event.blockNumber) >= from && Number(e.event.blockNumber) <= to);
    /** What our chain client posts for a history request start…end (its own planning code). */
    const ourHistory = (url: string, start: number, end: number, events: Body[], merge: boolean) =>
      chunksOf(start, end, inRange(events, start, end) as unknown as ChainClientBody[]).flatMap((chunk) =>
        planChunk(
          {
            lane: 'history:test',
            kind: 'swap',
            callback: Object.fromEntries(Object.keys(historyCallbacks).map((k) => [k, url])),
            merge,
          },
          chunk,
        ).map((d) => ({ url: d.url, body: JSON.parse(d.body) as unknown })),
      );
    /** The original's merged bucket of `height` (a multiple of 5): the events of its 5 blocks. */
    const bucket = (height: number, events: Body[]) => ({
      type: 'update_height',
      height,
      data: inRange(events, height - 4, height),
    });
    const postAll = async (posts: Array<{ url: string; body: unknown }>) => {
      const outcomes: string[] = [];
      for (const { url, body } of posts) {
        const reply = await post(url, body);
        expect(reply.statusCode, reply.body).toBe(200);
        outcomes.push(reply.json().message);
      }
      return outcomes;
    };
    const heightsPublished = async () =>
      (
        await db.pool.query<{ value: string }>(
          `SELECT value FROM bus_messages WHERE topic = 'chain.heights' ORDER BY "offset"`,
        )
      ).rows.map((r) => JSON.parse(r.value).payload.height as number);
    /** Every event published exactly once, in block order; nothing held; nothing asked again. */
    const expectEachOnce = async (events: Body[], height: number) => {
      const ids = (await published()).map((e) => e.id);
      expect(ids).toEqual(events.map((e) => `9006:${e.event.transactionHash}:${Number(e.event.logIndex)}`));
      expect(await heights.get('9006', 'swap')).toBe(height);
      const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM connector_pending_events`);
      expect(rows[0].n).toBe(0);
      expect(backfills).toEqual([]);
    };

    for (const merge of [true, false])
      it(`history ranges starting and ending mid-chunk (ours, ${merge ? 'merged' : 'one by one'}), then live and the original's history over them`, async () => {
        const events = eventsAt(11, 13, 16, 21, 26, 27, 28, 30, 30);
        // Two history ranges: [11, 12] leaves the stored height at 12; [13, 27] starts and ends mid-chunk.
        await postAll(ourHistory(HISTORY_URL, 11, 12, events, merge));
        expect(await heights.get('9006', 'swap')).toBe(12);
        await postAll(ourHistory(HISTORY_URL, 13, 27, events, merge));
        expect(await heights.get('9006', 'swap')).toBe(27);
        // The live chunk of 26…30 overlaps the history's last chunk: only 28 and 30 are new.
        expect(await postAll([{ url: '/callback/9006/swap', body: bucket(30, events) }])).toEqual([
          'processed',
        ]);
        // The original's history over it all (aligned down to 10, buckets 15…30 and no last one), and a
        // retried single post of the overlapped block: nothing again.
        const replay = [15, 20, 25, 30].map((h) => ({ url: HISTORY_URL, body: bucket(h, events) }));
        expect(await postAll(replay)).toEqual(Array(4).fill('already processed'));
        expect(await postAll([{ url: HISTORY_URL, body: events[5] }])).toEqual(['already processed']);
        await expectEachOnce(events, 30);
        expect(await heightsPublished()).toEqual([12, 15, 20, 25, 27, 30]);
      });

    it('a history chunk ending mid-chunk that arrives after the live chunk over its blocks changes nothing', async () => {
      const events = eventsAt(13, 16, 22, 26, 27, 29);
      const history = ourHistory(HISTORY_URL, 11, 27, events, false);
      // The history's lane is slower than the live one: its last chunk [26, 27] comes after live 30.
      const tail = history.findIndex(
        (p) => (p.body as { event?: { blockNumber: string } }).event?.blockNumber === '0x1a',
      );
      expect(await postAll(history.slice(0, tail))).toContain('processed');
      expect(await heights.get('9006', 'swap')).toBe(25);
      expect(await postAll([{ url: '/callback/9006/swap', body: bucket(30, events) }])).toEqual([
        'processed',
      ]);
      expect(await postAll(history.slice(tail))).toEqual(Array(3).fill('already processed'));
      await expectEachOnce(events, 30);
    });

    it('held single events of a range ending mid-chunk wait for the next chunk, never beyond it', async () => {
      const events = eventsAt(12, 14, 17, 19);
      // History without merge of [11, 17], its posts of 17 in before its height of 15 (a chain client's
      // deliveries may overlap); the live chunk 20 then takes the rest.
      const history = ourHistory(HISTORY_URL, 11, 17, events, false);
      await postAll([history[3]!, ...history]);
      expect(await heights.get('9006', 'swap')).toBe(17);
      expect((await published()).map((e) => e.payload.blockNumber)).toEqual([12, 14, 17]);
      expect(await postAll([{ url: '/callback/9006/swap', body: bucket(20, events) }])).toEqual([
        'processed',
      ]);
      await expectEachOnce(events, 20);
    });

    it('a history chunk starting mid-chunk above the stored height (its blocks before were lost in a crash) opens a gap', async () => {
      const events = eventsAt(11, 14, 18);
      // Blocks 11 and 12 came as a history chunk of [11, 12], committed without a flush (chunkCommit async);
      // the next request asked for 13…20 from the height 12.
      await postAll(ourHistory(HISTORY_URL, 11, 12, events, true));
      const request = `${HISTORY_URL}&from=13`;
      // The server crashed: the write of [11, 12] is lost, the height is 10 again.
      await db.pool.query(`UPDATE connector_heights SET height = 10, last_event_id = NULL`);
      await db.pool.query(`DELETE FROM bus_messages; DELETE FROM archive_documents`);
      // The request's first chunk covers 13…15 only: taken as 11…15 it skipped block 11 for good.
      const first = ourHistory(request, 13, 20, events, true);
      expect(await postAll(first.slice(0, 1))).toEqual(['gap: backfill requested']);
      expect(backfills).toEqual([['9006', 10, 15]]);
      expect(await heights.get('9006', 'swap')).toBe(10);
      backfills.length = 0;
      // The gap's history, and the rest of the request, then take every block once.
      await postAll(ourHistory(`${HISTORY_URL}&from=11`, 11, 15, events, true));
      expect(await postAll(first.slice(1))).toEqual(['processed']);
      await expectEachOnce(events, 20);
    });
  });

  const refused: Array<[string, () => unknown, RegExp, number?]> = [
    [
      'another chain',
      () => ({
        type: 'update_height',
        height: 15,
        data: [originalBody(transferOutVector, 12, 0, { chain_id: '614' })],
      }),
      /event of chain 614 posted for chain 9006/,
    ],
    [
      'a type that is not the log',
      () => ({
        type: 'update_height',
        height: 15,
        data: [originalBody(transferOutVector, 12, 0, { type: 'TransferIn' })],
      }),
      /type "TransferIn" but the log is LogNewTransferOut/,
    ],
    [
      'undecodable data',
      () => ({
        type: 'update_height',
        height: 15,
        data: [originalBody({ ...transferOutVector, log_data: '0x1234' }, 12)],
      }),
      /does not decode/,
    ],
    [
      'an event outside its chunk',
      () => ({ type: 'update_height', height: 15, data: [originalBody(transferOutVector, 3)] }),
      /outside the chunk of height 15/,
    ],
    [
      'a missing block',
      () => ({
        type: 'update_height',
        height: 15,
        data: [{ ...originalBody(transferOutVector, 12), block: undefined }],
      }),
      /block/,
    ],
    ['a negative height', () => ({ type: 'update_height', height: -5 }), /height/],
    ['an unknown type', () => ({ type: 'delete_everything' }), /invalid event body/],
    ['a body that is not an object', () => [1, 2, 3], /invalid event body/],
  ];
  for (const [what, body, message] of refused) {
    it(`refuses ${what} with a 400 and a clear message, changing nothing`, async () => {
      const reply = await post('/callback/9006/swap', body());
      expect(reply.statusCode).toBe(400);
      expect(reply.json().code).toBe(400);
      expect(reply.json().message).toMatch(message);
      expect(await published()).toHaveLength(0);
      expect(await heights.get('9006', 'swap')).toBe(10);
    });
  }

  it('answers malformed JSON with a 400 in the {code, message} shape', async () => {
    const reply = await app.inject({
      method: 'POST',
      url: '/callback/9006/swap',
      payload: '{"type":',
      headers: { 'content-type': 'application/json' },
    });
    expect(reply.statusCode).toBe(400);
    expect(reply.json()).toMatchObject({ code: 400, message: expect.stringMatching(/JSON/i) });
  });

  it('serves its OpenAPI document, which takes the original bodies, refuses what the route refuses and states every answer', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const route = doc.paths['/callback/{chainId}/{stream}'].post;
    expect(route.parameters[0].schema.enum).toEqual(['9006']);
    const ajv = openApiValidator();
    const body = ajv.compile(route.requestBody.content['application/json'].schema);
    const answers = Object.fromEntries(
      Object.entries(route.responses as Record<string, any>).map(([status, r]) => [
        status,
        ajv.compile(r.content['application/json'].schema),
      ]),
    );
    const valid = [
      { type: 'update_height', height: 15, data: [originalBody(transferOutVector, 12)] },
      { type: 'update_height', height: 20 },
      originalBody(confirmOutVector, 21, 0, { chain_id: 9006 }),
    ];
    const refused = [
      { type: 'update_height', height: -1 },
      { type: 'update_height', height: 25, extra: true },
      originalBody(transferOutVector, 26, 0, { tx: {} }),
      originalBody(transferOutVector, 26, 0, { type: 'Transfer' }),
    ];
    for (const b of [...valid, ...refused]) {
      const documented = body(b);
      const reply = await post('/callback/9006/swap', b);
      expect(documented, JSON.stringify(b).slice(0, 100)).toBe(reply.statusCode !== 400);
      expect(answers[String(reply.statusCode)]!(reply.json()), reply.body).toBe(true);
    }
    expect(valid.every((b) => body(b))).toBe(true);
    const missing = await post('/callback/1/swap', { type: 'update_height', height: 5 });
    expect(answers['404']!(missing.json())).toBe(true);
  });

  // Numbers the Connector makes JS numbers of must be safe integers, or the topic schema refuses the message
  // after the boundary accepted it: a 500 for a chunk, and a held event that failed every later chunk.
  const tooBig = '0xffffffffffffffffffff';
  const unsafe: Array<[string, (block: number) => ReturnType<typeof originalBody>]> = [
    [
      'block timestamp',
      (block) => {
        const body = originalBody(transferOutVector, block);
        return { ...body, block: { ...body.block, timestamp: tooBig } };
      },
    ],
    [
      'log index',
      (block) => {
        const body = originalBody(transferOutVector, block);
        return { ...body, event: { ...body.event, logIndex: '0x20000000000000' } };
      },
    ],
    [
      'block number',
      (block) => {
        const body = originalBody(transferOutVector, block);
        const blockNumber = '0x' + (2 ** 53 + block).toString(16);
        return {
          ...body,
          event: { ...body.event, blockNumber },
          block: { ...body.block, number: blockNumber },
        };
      },
    ],
  ];
  for (const [what, make] of unsafe) {
    it(`refuses a ${what} above 2^53 - 1 with a 400, in a chunk or as a single event, and the stream moves on`, async () => {
      const inChunk = await post('/callback/9006/swap', {
        type: 'update_height',
        height: 15,
        data: [make(12)],
      });
      expect(inChunk.statusCode, inChunk.body).toBe(400);
      expect(inChunk.json()).toEqual({ code: 400, message: expect.stringMatching(/2\^53/) });
      const single = await post('/callback/9006/swap', make(12));
      expect(single.statusCode, single.body).toBe(400);
      expect(single.json().code).toBe(400);
      const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM connector_pending_events`);
      expect(rows[0].n).toBe(0);
      // Nothing is left behind that could fail the chunk of block 12.
      const next = await post('/callback/9006/swap', {
        type: 'update_height',
        height: 15,
        data: [originalBody(transferOutVector, 13)],
      });
      expect(next.json()).toEqual({ code: 200, message: 'processed' });
      expect(await heights.get('9006', 'swap')).toBe(15);
      expect((await published()).map((e) => e.payload.blockNumber)).toEqual([13]);
    });
  }

  it('drops a held row that can no longer be published instead of failing every chunk of its blocks', async () => {
    // As an older version held it (its timestamp passed the boundary then), beside a good one.
    const poisoned = originalBody(transferOutVector, 12);
    poisoned.block.timestamp = tooBig;
    const good = originalBody(confirmOutVector, 14);
    const refusals = async () =>
      (await connector.registry.getSingleMetric('connector_rejected_bodies_total')!.get()).values
        .map((v) => `${v.labels.chain}/${v.labels.reason}=${v.value}`)
        .sort();
    const before = await refusals();
    expect((await post('/callback/9006/swap', good)).json().message).toBe('held until its height update');
    await db.pool.query(
      `INSERT INTO connector_pending_events (chain_id, stream, event_id, block_number, body)
       VALUES ('9006', 'swap', $1, 12, $2::jsonb)`,
      [`9006:${poisoned.event.transactionHash}:0`, JSON.stringify(poisoned)],
    );
    const reply = await post('/callback/9006/swap', { type: 'update_height', height: 15 });
    expect(reply.json()).toEqual({ code: 200, message: 'processed' });
    expect(await heights.get('9006', 'swap')).toBe(15);
    expect((await published()).map((e) => [e.payload.kind, e.payload.blockNumber])).toEqual([
      ['ConfirmOut', 14],
    ]);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM connector_pending_events`);
    expect(rows[0].n).toBe(0);
    // Counted once, as held_invalid of its chain (not also as an undecodable body: nobody posted it now).
    const after = (await refusals()).filter((r) => !before.includes(r));
    expect(after).toEqual(['9006/held_invalid=1']);
  });

  it("refuses an event that is not of the route's stream: a TransferOut posted to the reputation stream", async () => {
    await heights.init('9006', 'reputation', 10);
    const chunk = await post('/callback/9006/reputation', {
      type: 'update_height',
      height: 15,
      data: [originalBody(transferOutVector, 12)],
    });
    expect(chunk.statusCode, chunk.body).toBe(400);
    expect(chunk.json()).toEqual({
      code: 400,
      message: expect.stringMatching(/TransferOut event does not belong to the reputation stream/),
    });
    const single = await post('/callback/9006/reputation', originalBody(transferOutVector, 12));
    expect(single.statusCode).toBe(400);
    expect(await published()).toHaveLength(0);
    expect(await heights.get('9006', 'reputation')).toBe(10);
  });

  it('publishes the same event twice in one body once, and refuses two different bodies for one log', async () => {
    const twice = originalBody(transferOutVector, 12);
    const reply = await post('/callback/9006/swap', {
      type: 'update_height',
      height: 15,
      data: [twice, twice],
    });
    expect(reply.json()).toEqual({ code: 200, message: 'processed' });
    expect((await published()).map((e) => e.id)).toEqual([`9006:${twice.event.transactionHash}:0`]);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM archive_documents`);
    expect(rows[0].n).toBe(1);
    // The same log with another body (another type of event claims its position): which one is true is unknown.
    const other = originalBody(confirmOutVector, 17);
    const clash = {
      ...originalBody(transferOutVector, 17),
      event: { ...originalBody(transferOutVector, 17).event },
    };
    clash.event.transactionHash = other.event.transactionHash;
    const refused = await post('/callback/9006/swap', {
      type: 'update_height',
      height: 20,
      data: [other, clash],
    });
    expect(refused.statusCode, refused.body).toBe(400);
    expect(refused.json().message).toMatch(/two different bodies for the log/);
    expect(await heights.get('9006', 'swap')).toBe(15);
  });

  it("refuses a log a reorg removed, a block or receipt that is not the log's, and two times for one block", async () => {
    const refusals = async () =>
      Object.fromEntries(
        (await connector.registry.getSingleMetric('connector_rejected_bodies_total')!.get()).values.map(
          (v) => [v.labels.reason, v.value],
        ),
      );
    const before = await refusals();
    const chunk = (...data: unknown[]) => ({ type: 'update_height', height: 15, data });
    const removed = originalBody(transferOutVector, 12);
    removed.event.removed = true;
    const otherBlock = originalBody(transferOutVector, 12);
    otherBlock.block.hash = '0x' + 'cc'.repeat(32);
    const otherReceipt = originalBody(transferOutVector, 12);
    otherReceipt.tx.transactionHash = '0x' + 'dd'.repeat(32);
    const later = originalBody(confirmOutVector, 12, 1);
    later.block.timestamp = '0x' + (1_700_000_100 + 99_999).toString(16);
    const cases: Array<[unknown, RegExp]> = [
      [chunk(removed), /is marked removed \(taken back by a reorg\): not an event/],
      [chunk(otherBlock), /block hash 0xcc.* is not the log's block hash 0xbb/],
      [chunk(otherReceipt), /the receipt of 0xdd.* is not the log's transaction/],
      [chunk(originalBody(transferOutVector, 12), later), /block 12 has two times in one body/],
      [removed, /is marked removed/],
    ];
    for (const [body, message] of cases) {
      const reply = await post('/callback/9006/swap', body);
      expect(reply.statusCode, reply.body).toBe(400);
      expect(reply.json().message).toMatch(message);
    }
    expect(await published()).toHaveLength(0);
    expect(await heights.get('9006', 'swap')).toBe(10);
    const after = await refusals();
    expect((after.removed ?? 0) - (before.removed ?? 0)).toBe(2);
    expect((after.inconsistent ?? 0) - (before.inconsistent ?? 0)).toBe(3);
    // Bodies without the block's hash or the receipt's are taken as before (the original sends both).
    const bare = originalBody(transferOutVector, 12);
    delete (bare.block as { hash?: string }).hash;
    delete (bare.tx as { transactionHash?: string }).transactionHash;
    expect((await post('/callback/9006/swap', chunk(bare))).json().message).toBe('processed');
  });

  it('a held single event of a block the chunk gives another hash or time (a reorg between them) is dropped, counted and logged, never published', async () => {
    const refusals = async () =>
      Object.fromEntries(
        (await connector.registry.getSingleMetric('connector_rejected_bodies_total')!.get()).values.map(
          (v) => [v.labels.reason, v.value],
        ),
      );
    const before = (await refusals()).held_conflict ?? 0;
    /** `body` as a chain client saw it in another version of its block (hash 0xcc…, a later time). */
    const reorged = <T extends ReturnType<typeof originalBody>>(body: T): T => {
      body.event.blockHash = body.block.hash = '0x' + 'cc'.repeat(32);
      body.block.timestamp = '0x' + (Number(body.block.timestamp) + 1).toString(16);
      body.event_raw = JSON.stringify(body.event);
      return body;
    };
    // Posted one by one (history without merge) as the chain was before a reorg of blocks 12 and 13.
    const gone = originalBody(transferOutVector, 12, 0);
    const moved = originalBody(confirmOutVector, 13, 1);
    const kept = originalBody(confirmOutVector, 14, 2);
    // Block 13 was posted again after the reorg (the later post's version is the chain's).
    const movedAgain = reorged(originalBody(transferOutVector, 13, 3));
    for (const body of [gone, moved, kept, movedAgain])
      expect((await post('/callback/9006/swap', body)).json().message).toBe('held until its height update');
    // The chunk has block 12 as it is now: another log, another hash and time.
    const now12 = reorged(originalBody(confirmOutVector, 12, 4));
    const reply = await post('/callback/9006/swap', { type: 'update_height', height: 15, data: [now12] });
    expect(reply.json()).toEqual({ code: 200, message: 'processed' });
    const events = await published();
    // One version of each block: never an event of a block the chain no longer has beside the block's events.
    expect(events.map((e) => [e.payload.blockNumber, e.payload.logIndex, e.payload.blockTimestamp])).toEqual([
      [12, 4, 1_700_000_113],
      [13, 3, 1_700_000_114],
      [14, 2, 1_700_000_114],
    ]);
    expect((await refusals()).held_conflict).toBe(before + 2);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM connector_pending_events`);
    expect(rows[0].n).toBe(0);
    expect(await heights.get('9006', 'swap')).toBe(15);
  });

  it('a held single event posted again in the version of its block a reorg made keeps that version: published, not dropped as held_conflict', async () => {
    // Block 13 as first read, with one log; a reorg replaces it at the same height, re-including the same
    // transaction (same log index, so the same event id) beside a new one.
    const before = originalBody(transferOutVector, 13, 0);
    const reorged = <T extends ReturnType<typeof originalBody>>(body: T): T => {
      body.event.blockHash = body.block.hash = '0x' + 'cc'.repeat(32);
      body.block.timestamp = '0x' + (Number(body.block.timestamp) + 1).toString(16);
      body.event_raw = JSON.stringify(body.event);
      return body;
    };
    const again = reorged(originalBody(transferOutVector, 13, 0));
    const beside = reorged(originalBody(confirmOutVector, 13, 1));
    // A later history task (without merge) posts block 13 as it is now.
    for (const body of [before, again, beside])
      expect((await post('/callback/9006/swap', body)).json().message).toBe('held until its height update');
    expect(
      (
        await post('/callback/9006/swap?source=history', { type: 'update_height', height: 15, data: [] })
      ).json(),
    ).toEqual({ code: 200, message: 'processed' });
    // Both events of block 13 as the chain has it: the re-included one was lost for good before (its
    // held row kept the first post's block, which the newer post of its neighbour then contradicted).
    expect((await published()).map((e) => [e.payload.logIndex, e.payload.blockTimestamp])).toEqual([
      [0, 1_700_000_114],
      [1, 1_700_000_114],
    ]);
    expect(await heights.get('9006', 'swap')).toBe(15);
  });

  it('takes addresses in any case: hex from a chain client is not a typed address to checksum', async () => {
    const body = originalBody(transferOutVector, 12);
    // A mixed case that is not the address's checksum (one letter flipped) in the log and the receipt.
    body.event.address = CONTRACT.replace(/[a-f]/, (c) => c.toUpperCase());
    body.tx.from = '0x3c44CdDdB6a900fa2b585dd299e03d12FA4293BC';
    const reply = await post('/callback/9006/swap', { type: 'update_height', height: 15, data: [body] });
    expect(reply.json()).toEqual({ code: 200, message: 'processed' });
    const [event] = await published();
    expect(event!.payload).toMatchObject({ contract: CONTRACT, txFrom: SENDER });
  });

  it('holds a single event whose strings hold U+0000 (jsonb refuses them), and publishes it with its chunk', async () => {
    const fragment = swapInterface.getEvent('LogNewTransferOut')!;
    const args = swapInterface
      .decodeEventLog(fragment, transferOutVector.log_data, [transferOutVector.topic0])
      .toArray();
    args[fragment.inputs.findIndex((p) => p.name === 'requestor')] = 'req\u0000uester';
    const data = swapInterface.encodeEventLog(fragment, args).data;
    // A chain client's decoded arguments carry the string too: the body stored while held holds U+0000.
    const body = originalBody({ ...transferOutVector, log_data: data }, 12, 0, {
      event_parse: { ...transferOutVector.event_parse, requestor: 'req\u0000uester' },
    });
    expect((await post('/callback/9006/swap?source=history', body)).json()).toEqual({
      code: 200,
      message: 'held until its height update',
    });
    const heartbeat = { type: 'update_height', height: 15 };
    expect((await post('/callback/9006/swap?source=history', heartbeat)).json().message).toBe('processed');
    const events = await published();
    expect(events.map((e) => (e.payload as { requestor?: string }).requestor)).toEqual(['req\u0000uester']);
  });

  it('connector_lag_blocks counts from the highest height reported, also while history chunks catch up', async () => {
    const gauge = async (name: string) =>
      (await connector.registry.getSingleMetric(name)!.get()).values.find(
        (v) => v.labels.chain === '9006' && v.labels.stream === 'swap',
      )?.value;
    // A live chunk far ahead (a restart, a long outage): the gap is asked through history.
    expect((await post('/callback/9006/swap', { type: 'update_height', height: 1000 })).json().message).toBe(
      'gap: backfill requested',
    );
    expect(await gauge('connector_lag_blocks')).toBe(990);
    for (const height of [15, 20, 25])
      await post('/callback/9006/swap?source=history', { type: 'update_height', height });
    expect(await gauge('connector_height')).toBe(25);
    expect(await gauge('connector_lag_blocks')).toBe(975);
  });

  it('answers 404 for a chain it has no chain client for, and counts refusals', async () => {
    const reply = await post('/callback/1/swap', { type: 'update_height', height: 5 });
    expect(reply.statusCode).toBe(404);
    const metrics = await connector.registry.getSingleMetricAsString('connector_rejected_bodies_total');
    expect(metrics).toMatch(/reason="wrong_chain"} [1-9]/);
    expect(metrics).toMatch(/reason="unknown_chain"} [1-9]/);
    // A chain from the path is a label only when it is configured: a client cannot add series at will.
    expect(metrics).not.toMatch(/chain="1"/);
    expect(metrics).toMatch(/chain="9006",reason="wrong_chain"} [1-9]/);
  });
});

describe('connector callbacks: bounds against a buggy or hostile caller', () => {
  let db: TestDatabase;
  let app: FastifyInstance;
  let heights: HeightStore;
  let connector: Awaited<ReturnType<typeof startTestConnector>>;
  const backfills: Array<[string, number, number]> = [];
  const post = (path: string, body: unknown) =>
    app.inject({ method: 'POST', url: path, payload: body as object });
  const count = async (table: string, where = 'true') =>
    (await db.pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`)).rows[0].n;

  beforeAll(async () => {
    db = await createTestDatabase([connectorMigrations]);
    connector = await startTestConnector(db, {
      requestBackfill: (chain, _stream, stored, height) => void backfills.push([chain, stored, height]),
      limits: { maxBlocksAhead: 100 },
    });
    ({ app, heights } = connector);
  });
  beforeEach(async () => {
    await db.pool.query(
      `DELETE FROM connector_heights; DELETE FROM bus_messages; DELETE FROM connector_pending_events`,
    );
    await heights.init('9006', 'swap', 10);
    backfills.length = 0;
  });
  afterAll(async () => {
    await connector?.close();
    await db?.drop();
  });

  it('refuses a chunk more than maxBlocksAhead above the stored height, and requests only that far', async () => {
    const forged = await post('/callback/9006/swap', { type: 'update_height', height: 1_000_000_000 });
    expect(forged.statusCode, forged.body).toBe(400);
    expect(forged.json()).toEqual({
      code: 400,
      message: expect.stringMatching(/1000000000 is more than 100 blocks above the stored height 10/),
    });
    expect(backfills).toEqual([['9006', 10, 110]]);
    expect(await heights.get('9006', 'swap')).toBe(10);
    expect(await count('bus_messages')).toBe(0);
    // At the bound: a gap like any other.
    const within = await post('/callback/9006/swap', { type: 'update_height', height: 110 });
    expect(within.json()).toEqual({ code: 200, message: 'gap: backfill requested' });
    const metrics = await connector.registry.getSingleMetricAsString('connector_rejected_bodies_total');
    expect(metrics).toMatch(/reason="too_far_ahead"} 1/);
  });

  it('refuses a single event more than maxBlocksAhead above the stored height instead of holding it', async () => {
    const far = await post('/callback/9006/swap', originalBody(transferOutVector, 111));
    expect(far.statusCode, far.body).toBe(400);
    expect(far.json().message).toMatch(
      /event in block 111 is more than 100 blocks above the stored height 10/,
    );
    expect(await count('connector_pending_events')).toBe(0);
    expect((await post('/callback/9006/swap', originalBody(transferOutVector, 110))).json().message).toBe(
      'held until its height update',
    );
  });
});
