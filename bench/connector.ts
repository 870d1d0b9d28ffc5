import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { PostgresBus } from '../shared/bus/postgres/postgres-bus.js';
import { createLogger } from '../shared/logging/logger.js';
import { createHttpServer } from '../shared/runtime/http.js';
import { HeightStore } from '../services/connector/heights.js';
import { testBlockTimestamp, testIngestor, TEST_SWAP_CONTRACT } from '../services/connector/test-harness.js';
import { connectorMigrations } from '../services/connector/migrations.js';
import { registerCallbackRoutes } from '../services/connector/routes.js';
import {
  allTopics,
  chainEventId,
  chainEvents,
  chainHeightId,
  chainHeights,
  encode,
  envelope,
  topicSpec,
} from '../topics/index.js';
import type { TopicBatch } from '../shared/bus/publish-many.js';
import { normalizeEvent, type ChainContracts } from '../services/connector/normalize.js';
import type { BenchSection } from './report.js';
import { fmt, printTable, rate, scratchDatabase } from './support.js';

const CALLBACKS = Number(process.env.BENCH_CALLBACKS ?? 1_000);
// Untimed rounds of both sides (a raw publish and a callback, in turn, as many of each) before the timed
// loop, so neither is measured while the JIT still compiles its code. BENCH_WARMUP=0 measures from cold.
const WARMUP = Number(process.env.BENCH_WARMUP ?? CALLBACKS);
const EVENTS_PER_CHUNK = 2;
// The last round alternates in blocks of this many (raw publishes, then as many callbacks) instead of one by
// one: in turn one by one, each raw publish follows a callback and finds the process cold, so it runs slower
// than publishes that follow each other; blocks show the baseline at that rate.
const BLOCK = 50;
// A busy chunk (history of a busy network): how the Connector's cost grows with the events of a chunk.
const BUSY_EVENTS_PER_CHUNK = 10;
const BUSY_CALLBACKS = Math.max(1, Math.floor(CALLBACKS / 4));
const vectors = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../test/fixtures/otmoic-relay.json'), 'utf8'),
);
const golden = vectors.events.filter((v: { log_data?: string }) => v.log_data);

/** The JSON bodies of `count` chunks following height `after` (heights after + 5, after + 10, …). */
function chunkBodies(after: number, count: number, events = EVENTS_PER_CHUNK): string[] {
  return Array.from({ length: count }, (_, i) => JSON.stringify(chunk(after + (i + 1) * 5, events)));
}

/** An original-shape update_height body of height `h` holding `events` golden events. */
function chunk(h: number, events = EVENTS_PER_CHUNK) {
  const data = Array.from({ length: events }, (_, i) => {
    const v = golden[i % golden.length];
    const block = h - 1;
    const event = {
      address: TEST_SWAP_CONTRACT,
      topics: [v.topic0],
      data: v.log_data,
      blockNumber: '0x' + block.toString(16),
      transactionHash: '0x' + randomBytes(32).toString('hex'),
      transactionIndex: '0x0',
      blockHash: '0x' + 'bb'.repeat(32),
      logIndex: '0x' + i.toString(16),
      removed: false,
    };
    return {
      event,
      tx: { from: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC', status: '0x1', logs: [event] },
      eventParse: v.event_parse,
      block: { number: event.blockNumber, timestamp: '0x' + (1_700_000_000 + block).toString(16) },
      type: v.type,
      transfer_info: '{}',
      event_raw: JSON.stringify(event),
      event_parse: v.event_parse,
      chain_id: '9006',
    };
  });
  return { type: 'update_height', height: h, data };
}

/**
 * `npm run bench -- connector`: chain-client callbacks/s ingested over HTTP into chain.events (validate,
 * decode, archive, publish, advance the height), beside the raw bus publish rate of the same messages on the
 * same PostgreSQL, in one run.
 */
export async function run(): Promise<BenchSection[]> {
  const database = await scratchDatabase([connectorMigrations]);
  const { pool, url } = database;
  const log = createLogger({ level: 'warn' });
  try {
    const bus = new PostgresBus({ pool, connectionString: url, log });
    await bus.ensureTopics([
      ...allTopics.map((t) => topicSpec(t, 8)),
      { name: 'bench.raw', partitions: 8, retentionMs: null },
      { name: 'bench.raw-heights', partitions: 8, retentionMs: null },
    ]);
    const registry = new Registry();
    const heights = new HeightStore(pool);
    await heights.init('9006', 'swap', 0);
    // The configuration's default (chunkCommit 'async'), and the same with 'sync' behind a server of its own.
    const { ingestor } = testIngestor({ pool, bus, heights, registry, log });
    const syncIngestor = testIngestor({ pool, bus, heights, log, chunkCommit: 'sync' }).ingestor;
    const app = createHttpServer({ service: 'connector', log, metrics: registry, db: pool });
    registerCallbackRoutes(app, '/callback', ingestor, () => undefined);
    // The raw publish behind the same HTTP exchange: a route that takes the same body (parsed as the
    // callback's is) and publishes the prepared messages of the chunk, the nth request the nth chunk's.
    let exchanged: TopicBatch[][] = [];
    let nextExchanged = 0;
    app.post('/raw-publish', async () => {
      await bus.publishMany(exchanged[nextExchanged++]!);
      return { code: 200, message: 'published' };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    const syncApp = createHttpServer({ service: 'connector', log, metrics: new Registry(), db: pool });
    registerCallbackRoutes(syncApp, '/callback', syncIngestor, () => undefined);
    await syncApp.listen({ port: 0, host: '127.0.0.1' });
    const syncPort = (syncApp.server.address() as { port: number }).port;

    // Heights: the warm-up's chunks, then the timed callbacks', the direct calls', the busy chunks', and the
    // chunks of the rounds against the raw publish behind HTTP, in blocks, and with 'sync'.
    const bodies = chunkBodies(0, WARMUP + CALLBACKS);
    const busyFrom = (WARMUP + 2 * CALLBACKS) * 5;
    const busyWarmup = Math.min(WARMUP, BUSY_CALLBACKS);
    const busyBodies = chunkBodies(busyFrom, busyWarmup + BUSY_CALLBACKS, BUSY_EVENTS_PER_CHUNK);
    // Baseline: publishing the same normalised messages straight to the bus, one publish per chunk.
    const chain = ingestor.chain('9006')!;
    const messages = bodies.map((b) => rawBatches(b, chain));
    const busyMessages = busyBodies.map((b) => rawBatches(b, chain));
    const exchangedFrom = busyFrom + (busyWarmup + BUSY_CALLBACKS) * 5;
    const exchangedBodies = chunkBodies(exchangedFrom, WARMUP + CALLBACKS);
    exchanged = exchangedBodies.map((b) => rawBatches(b, chain));
    const blocksFrom = exchangedFrom + (WARMUP + CALLBACKS) * 5;
    const blockBodies = chunkBodies(blocksFrom, CALLBACKS);
    const blockMessages = blockBodies.map((b) => rawBatches(b, chain));
    const syncFrom = blocksFrom + CALLBACKS * 5;
    const syncBodies = chunkBodies(syncFrom, CALLBACKS);
    const syncMessages = syncBodies.map((b) => rawBatches(b, chain));
    // A keep-alive node:http client on a thread of its own, as a chain client is a process of its own and holds
    // its connection: the client's own cost is not the Connector's (undici's fetch costs about a millisecond a
    // request here; node:http on the Connector's own thread, as this bench had it before, about 0.3 ms).
    const client = chainClient(port, '/callback/9006/swap', [
      ...bodies,
      ...busyBodies,
      ...exchangedBodies,
      ...blockBodies,
    ]);
    const rawClient = chainClient(port, '/raw-publish', exchangedBodies);
    const syncClient = chainClient(syncPort, '/callback/9006/swap', syncBodies);
    // Chunk by chunk in turn (a baseline round, then a callback), so both see the same table sizes and the
    // same load from whatever else runs on the machine; `block` > 1 alternates that many of each. `baseline(i)`
    // does the ith baseline round and gives its milliseconds; `post(i)` posts the ith callback.
    const alternate = async (
      rounds: number,
      baseline: (i: number) => Promise<number>,
      post: (i: number) => Promise<Answer>,
      warmup: number,
      block = 1,
    ) => {
      let rawMs = 0;
      let ingestMs = 0;
      for (let first = 0; first < rounds; first += block) {
        const end = Math.min(rounds, first + block);
        for (let i = first; i < end; i++) {
          const ms = await baseline(i);
          if (i >= warmup) rawMs += ms;
        }
        for (let i = first; i < end; i++) {
          const response = await post(i);
          if (response.status !== 200)
            throw new Error(`callback answered ${response.status}: ${response.text}`);
          if (i >= warmup) ingestMs += response.ms;
        }
      }
      return { rawMs, ingestMs };
    };
    const publishing = (batches: TopicBatch[][]) => async (i: number) => {
      const start = performance.now();
      await bus.publishMany(batches[i]!);
      return performance.now() - start;
    };
    const { rawMs, ingestMs } = await alternate(
      bodies.length,
      publishing(messages),
      (i) => client.post(i),
      WARMUP,
    );
    // Where the time goes: the same ingestion without HTTP (Ingestor.heightUpdate called directly, on the
    // following heights), again in turn with raw publishes of the same messages.
    let directMs = 0;
    let rawAgainMs = 0;
    for (let i = 0; i < CALLBACKS; i++) {
      let start = performance.now();
      await bus.publishMany(messages[WARMUP + i]!);
      rawAgainMs += performance.now() - start;
      start = performance.now();
      await ingestor.heightUpdate('9006', 'swap', chunk((WARMUP + CALLBACKS + i + 1) * 5) as never);
      directMs += performance.now() - start;
    }
    // Busy chunks over HTTP, in turn with their raw publishes (untimed rounds first, as above).
    const busy = await alternate(
      busyBodies.length,
      publishing(busyMessages),
      (i) => client.post(bodies.length + i),
      busyWarmup,
    );
    // Against the raw publish behind the same HTTP exchange, in turn, on the following heights.
    const behindHttp = await alternate(
      exchangedBodies.length,
      async (i) => {
        const answer = await rawClient.post(i);
        if (answer.status !== 200) throw new Error(`raw publish answered ${answer.status}: ${answer.text}`);
        return answer.ms;
      },
      (i) => client.post(bodies.length + busyBodies.length + i),
      WARMUP,
    );
    // In blocks, on the following heights (everything is warm by now).
    const inBlocks = await alternate(
      blockBodies.length,
      publishing(blockMessages),
      (i) => client.post(bodies.length + busyBodies.length + exchangedBodies.length + i),
      0,
      BLOCK,
    );
    // With connector.chunkCommit 'sync' (every chunk's write waits for the WAL flush), on the following
    // heights: the same Connector code behind a server of its own.
    const synchronous = await alternate(
      syncBodies.length,
      publishing(syncMessages),
      (i) => syncClient.post(i),
      0,
    );
    await syncClient.close();
    await rawClient.close();
    await client.close();
    await app.close();
    await syncApp.close();
    await bus.close();

    const callbacks = rate(CALLBACKS, ingestMs);
    const events = rate(CALLBACKS * EVENTS_PER_CHUNK, ingestMs);
    const raw = rate(CALLBACKS * EVENTS_PER_CHUNK, rawMs);
    const direct = rate(CALLBACKS * EVENTS_PER_CHUNK, directMs);
    const rawAgain = rate(CALLBACKS * EVENTS_PER_CHUNK, rawAgainMs);
    const busyEvents = rate(BUSY_CALLBACKS * BUSY_EVENTS_PER_CHUNK, busy.ingestMs);
    const busyRaw = rate(BUSY_CALLBACKS * BUSY_EVENTS_PER_CHUNK, busy.rawMs);
    const exchangedEvents = rate(CALLBACKS * EVENTS_PER_CHUNK, behindHttp.ingestMs);
    const exchangedRaw = rate(CALLBACKS * EVENTS_PER_CHUNK, behindHttp.rawMs);
    const blockEvents = rate(CALLBACKS * EVENTS_PER_CHUNK, inBlocks.ingestMs);
    const blockRaw = rate(CALLBACKS * EVENTS_PER_CHUNK, inBlocks.rawMs);
    const syncEvents = rate(CALLBACKS * EVENTS_PER_CHUNK, synchronous.ingestMs);
    const syncRaw = rate(CALLBACKS * EVENTS_PER_CHUNK, synchronous.rawMs);
    const title = `connector benchmark (${fmt(CALLBACKS)} update_height callbacks × ${EVENTS_PER_CHUNK} events after ${fmt(WARMUP)} untimed of each side, ${database.source})`;
    printTable(title, [
      ['raw bus publish (postgres log), one publish per chunk', `${fmt(raw)} msg/s   (baseline)`],
      [
        'connector: HTTP callback → validated, archived, published',
        `${fmt(callbacks)} callbacks/s = ${fmt(events)} events/s = ${(events / raw).toFixed(2)}x baseline (target ≥ 0.5x)`,
      ],
      [
        'the same without HTTP (Ingestor called directly)',
        `${fmt(direct)} events/s = ${(direct / rawAgain).toFixed(2)}x the raw publish in turn with it (${fmt(rawAgain)} msg/s)`,
      ],
      [
        `busy chunks (${BUSY_EVENTS_PER_CHUNK} events) over HTTP`,
        `${fmt(busyEvents)} events/s = ${(busyEvents / busyRaw).toFixed(2)}x their raw publish (${fmt(busyRaw)} msg/s)`,
      ],
      [
        'against the raw publish behind the same HTTP exchange',
        `${fmt(exchangedEvents)} events/s = ${(exchangedEvents / exchangedRaw).toFixed(2)}x (${fmt(exchangedRaw)} msg/s)`,
      ],
      [
        'that raw publish behind HTTP against the bare one (ceiling with sync commits)',
        `${fmt(exchangedRaw)} msg/s = ${(exchangedRaw / raw).toFixed(2)}x the baseline`,
      ],
      [
        `in blocks of ${BLOCK}: callbacks over HTTP against raw publishes`,
        `${fmt(blockEvents)} events/s = ${(blockEvents / blockRaw).toFixed(2)}x (${fmt(blockRaw)} msg/s)`,
      ],
      [
        `chunkCommit 'sync' over HTTP, in turn with raw publishes`,
        `${fmt(syncEvents)} events/s = ${(syncEvents / syncRaw).toFixed(2)}x (${fmt(syncRaw)} msg/s)`,
      ],
    ]);
    return [
      {
        title,
        rows: [
          {
            measure: 'raw bus publish (postgres log) of the same messages, one publish per chunk',
            value: `${fmt(raw)} msg/s`,
            note: 'baseline',
          },
          {
            measure:
              'connector: HTTP callback → validated, archived, published, height advanced (connector.chunkCommit async, the default)',
            value: `${fmt(events)} events/s (${fmt(callbacks)} callbacks/s)`,
            baseline: `${fmt(raw)} msg/s`,
            ratio: events / raw,
            target: 0.5,
          },
          {
            measure:
              'the same without HTTP (Ingestor.heightUpdate called directly), in turn with raw publishes',
            value: `${fmt(direct)} events/s`,
            baseline: `${fmt(rawAgain)} msg/s`,
            ratio: direct / rawAgain,
          },
          {
            measure: `busy chunks: ${fmt(BUSY_CALLBACKS)} callbacks × ${BUSY_EVENTS_PER_CHUNK} events over HTTP, in turn with their raw publishes`,
            value: `${fmt(busyEvents)} events/s`,
            baseline: `${fmt(busyRaw)} msg/s`,
            ratio: busyEvents / busyRaw,
          },
          {
            measure:
              'the same callbacks against the raw publish behind the same HTTP exchange (a route that takes the same body and publishes the same messages), in turn',
            value: `${fmt(exchangedEvents)} events/s`,
            baseline: `${fmt(exchangedRaw)} msg/s`,
            ratio: exchangedEvents / exchangedRaw,
          },
          {
            measure:
              'the raw publish behind the same HTTP exchange against the baseline: the ceiling over HTTP of a Connector whose write, like the raw publish, waits for the WAL flush (chunkCommit sync) and costs nothing more',
            value: `${fmt(exchangedRaw)} msg/s`,
            baseline: `${fmt(raw)} msg/s`,
            ratio: exchangedRaw / raw,
          },
          {
            measure: `the same callbacks over HTTP against raw publishes in blocks of ${BLOCK} in turn (${BLOCK} raw publishes, then ${BLOCK} callbacks): publishes that follow each other run faster than one after each callback`,
            value: `${fmt(blockEvents)} events/s`,
            baseline: `${fmt(blockRaw)} msg/s`,
            ratio: blockEvents / blockRaw,
          },
          {
            measure: `the same callbacks with connector.chunkCommit 'sync' (each chunk's write waits for the WAL flush) over HTTP, in turn with raw publishes`,
            value: `${fmt(syncEvents)} events/s`,
            baseline: `${fmt(syncRaw)} msg/s`,
            ratio: syncEvents / syncRaw,
          },
        ],
      },
    ];
  } finally {
    await database.dispose();
  }
}

/** The raw publish of a chunk: its events and its height message, together as the Connector publishes them. */
function rawBatches(body: string, chain: ChainContracts): TopicBatch[] {
  const { height, data } = JSON.parse(body) as { height: number; data: any[] };
  const events = data.map((event) => normalizeEvent(event, chain));
  const heightPayload = {
    chainId: chain.systemChainId,
    stream: 'swap' as const,
    height,
    blockTimestamp: testBlockTimestamp(height),
    lastEventId: chainEventId(events[events.length - 1]!),
  };
  return [
    {
      topic: 'bench.raw',
      messages: events.map((event) =>
        encode(
          chainEvents,
          envelope(chainEvents, event, { occurredAt: event.blockTimestamp, source: 'bench' }),
        ),
      ),
    },
    {
      topic: 'bench.raw-heights',
      messages: [
        encode(
          chainHeights,
          envelope(chainHeights, heightPayload, {
            occurredAt: heightPayload.blockTimestamp,
            source: 'bench',
            id: chainHeightId(heightPayload),
          }),
        ),
      ],
    },
  ];
}

interface Answer {
  status: number;
  text: string;
  ms: number;
}

/** The chain client on its own thread (chain-client-worker.ts): post(i) sends bodies[i] and times it there. */
function chainClient(port: number, path: string, bodies: string[]) {
  // A worker has no --import of its own: it registers tsx, then loads the TypeScript module.
  const entry = new URL('./chain-client-worker.ts', import.meta.url).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  const worker = new Worker(
    `import(${JSON.stringify(tsx)}).then((t) => { t.register(); return import(${JSON.stringify(entry)}); })`,
    { eval: true, execArgv: [], workerData: { port, path, bodies } },
  );
  // A worker that fails fails the callback in flight (and every later one), so the bench's finally still
  // stops its database: an error thrown from this listener would end the process without it.
  let failure: Error | undefined;
  let pending: { resolve(answer: Answer): void; reject(err: Error): void } | undefined;
  worker.on('message', (answer: Answer) => pending?.resolve(answer));
  worker.on('error', (err) => {
    failure = err;
    pending?.reject(err);
  });
  return {
    post(index: number): Promise<Answer> {
      if (failure) return Promise.reject(failure);
      return new Promise((resolve, reject) => {
        pending = { resolve, reject };
        worker.postMessage({ index });
      });
    },
    async close(): Promise<void> {
      worker.postMessage('close');
      await worker.terminate();
    },
  };
}
