import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { swapInterface } from '../../shared/otmoic/abi.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { ChainReader } from './chain-reader.js';
import { startChainClient } from './index.js';
import { chainClientMigrations } from './migrations.js';

const CONTRACT = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512';
const BLOCK_HASH = '0x' + '11'.repeat(32);
type Call = { id: number; method: string; params: any[] };

async function serve(handle: (body: string, response: http.ServerResponse) => void) {
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (c) => (body += c));
    request.on('end', () => handle(body, response));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** An HTTP refusal of a batch: its status, and headers (`retry-after`). */
type Refusal = { status: number; headers: Record<string, string> };

/**
 * A JSON-RPC node: `fail(calls)` answers a batch with an HTTP status (and headers), or never ('hang').
 * `synced` is the block the node has reached, which may be behind the `head` another node behind the same
 * balancer reported: it knows no block above it, and eth_getLogs answers nothing above it, as such nodes do.
 * `logsError(from, to)`: eth_getLogs of that range answers this JSON-RPC error (a pruned node).
 */
async function fakeNode(path = '/', fail: (calls: Call[]) => number | Refusal | 'hang' | void = () => {}) {
  const state = {
    head: 100,
    synced: Infinity,
    /** What eth_chainId answers (97). */
    chainId: '0x61',
    logs: [] as any[],
    logsError: (() => undefined) as (from: number, to: number) => string | undefined,
  };
  const known = (n: number) => n <= state.synced;
  const result = (c: Call) =>
    ({
      eth_chainId: state.chainId,
      eth_blockNumber: `0x${state.head.toString(16)}`,
      eth_getLogs: state.logs.filter((l) => {
        const n = Number(l.blockNumber);
        return n >= Number(c.params[0]?.fromBlock) && n <= Number(c.params[0]?.toBlock) && known(n);
      }),
      eth_getBlockByNumber: known(Number(c.params[0]))
        ? { number: c.params[0], timestamp: '0x10', hash: BLOCK_HASH }
        : null,
      eth_getBlockByHash:
        c.params[0] === BLOCK_HASH ? { number: '0x9', timestamp: '0x10', hash: BLOCK_HASH } : null,
      eth_getTransactionReceipt: { transactionHash: '0x' + 'ab'.repeat(32), from: CONTRACT },
    })[c.method] ?? null;
  const server = await serve((text, response) => {
    const parsed = JSON.parse(text);
    const calls: Call[] = Array.isArray(parsed) ? parsed : [parsed];
    const failure = fail(calls);
    if (failure === 'hang') return;
    if (typeof failure === 'number') return void response.writeHead(failure).end('down');
    if (failure) return void response.writeHead(failure.status, failure.headers).end('slow down');
    const answers = calls.map((c) => {
      const logsError =
        c.method === 'eth_getLogs' &&
        state.logsError(Number(c.params[0]?.fromBlock), Number(c.params[0]?.toBlock));
      return logsError
        ? { jsonrpc: '2.0', id: c.id, error: { code: -32000, message: logsError } }
        : { jsonrpc: '2.0', id: c.id, result: result(c) };
    });
    response
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]));
  });
  return { state, url: server.url + path, close: server.close };
}

/** A callback receiver that keeps every body it is posted. */
async function receiver() {
  const bodies: any[] = [];
  const server = await serve((text, response) => {
    bodies.push(JSON.parse(text));
    response.writeHead(200).end('{"code":200}');
  });
  return { bodies, url: server.url + '/cb', close: server.close };
}

const refundLog = (block: number) => ({
  address: CONTRACT.toLowerCase(),
  ...swapInterface.encodeEventLog('LogTransferOutRefunded', ['0x' + '33'.repeat(32)]),
  blockNumber: `0x${block.toString(16)}`,
  blockHash: BLOCK_HASH,
  transactionHash: '0x' + 'ab'.repeat(32),
  transactionIndex: '0x0',
  logIndex: '0x0',
  removed: false,
});

/** Faults of the chain's JSON-RPC node, as a chain client meets them; each once lost events or worse. */
describe('chain client: a failing, hung or lagging RPC node', () => {
  let db: TestDatabase;
  let systemChainId = 9000;
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  beforeAll(async () => {
    db = await createTestDatabase([chainClientMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });
  const start = (
    rpc: string,
    rpcTimeoutMs = 10_000,
    more: {
      historyAttempts?: number;
      startBlock?: number;
      confirmations?: number;
      nativeChainId?: string;
    } = {},
    metrics = new Registry(),
  ) =>
    startChainClient(
      { db: db.pool, log, metrics },
      {
        port: 0,
        rpc,
        systemChainId: String(++systemChainId),
        contractAddr: CONTRACT,
        confirmations: 0,
        startBlock: 0,
        pollIntervalMs: 100,
        deliveryAttempts: 10,
        keepSettledDays: 7,
        rpcTimeoutMs,
        ...more,
      },
    );
  const post = async (port: number, path: string, body: unknown, signal?: AbortSignal) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    });
    return { status: response.status, ...((await response.json()) as { code: number; message: string }) };
  };
  const merged = (url: string) => ({ callback: { on_height_update: url }, merge: true });

  it("a failed batch for a log's block and receipt is retried, and leaves no unhandled rejection", async () => {
    // Node ends the process on an unhandled rejection: with npm start, every service with it.
    let failures = 2;
    const rpc = await fakeNode('/', (calls) =>
      calls.some((c) => /Block|Receipt/.test(c.method)) && failures-- > 0 ? 503 : undefined,
    );
    rpc.state.head = 0;
    rpc.state.logs = [refundLog(3)];
    const callbacks = await receiver();
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => void unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    const client = await start(rpc.url);
    try {
      expect((await post(client.port, '/support/register', merged(callbacks.url))).code).toBe(200);
      rpc.state.head = 10;
      await waitFor(
        () => callbacks.bodies.some((b) => b.data?.length === 1),
        'the event delivered after the retry',
        15_000,
      );
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await client.stop();
      await rpc.close();
      await callbacks.close();
    }
  }, 30_000);

  it("the RPC URL's API key reaches neither the unauthenticated /health nor the log", async () => {
    const rpc = await fakeNode('/v3/SECRET-KEY-0123456789', () => 503);
    lines.length = 0;
    const client = await start(rpc.url);
    try {
      let health = '';
      await waitFor(
        async () =>
          (health = await (await fetch(`http://127.0.0.1:${client.port}/health`)).text()).includes(
            'degraded',
          ),
        'health degraded',
        15_000,
      );
      expect(health).toContain('the chain has not been read');
      expect(health).not.toContain('SECRET-KEY');
      expect(lines.some((l) => l.includes('chain follower step failed'))).toBe(true);
      expect(lines.join('\n')).not.toContain('SECRET-KEY');
    } finally {
      await client.stop();
      await rpc.close();
    }
  }, 30_000);

  it('a hung node: a history request answers 503 after rpcTimeoutMs, and stop() does not wait for the node', async () => {
    let hang = false;
    const rpc = await fakeNode('/', () => (hang ? 'hang' : undefined));
    const client = await start(rpc.url, 1_000);
    await new Promise((r) => setTimeout(r, 300));
    hang = true;
    const started = Date.now();
    const history = await post(
      client.port,
      '/support/history',
      { start: 1, end: 5, ...merged('http://127.0.0.1:9/x') },
      AbortSignal.timeout(15_000),
    );
    // Ethers' own timeout is 300 s.
    expect(history).toEqual({
      status: 503,
      code: 30_209,
      message: 'the chain head could not be read; retry later',
    });
    expect(Date.now() - started).toBeLessThan(6_000);
    const stopping = Date.now();
    await client.stop();
    expect(Date.now() - stopping).toBeLessThan(4_000);
    await rpc.close();
  }, 30_000);

  it('stopping while a step waits on the node logs no failure: the step was stopped, it did not fail', async () => {
    let hang = false;
    const rpc = await fakeNode('/', () => (hang ? 'hang' : undefined));
    const client = await start(rpc.url);
    try {
      await new Promise((r) => setTimeout(r, 300));
      hang = true;
      // A step of the follower (polling every 100 ms) is now waiting on the node.
      await new Promise((r) => setTimeout(r, 300));
      lines.length = 0;
      await client.stop();
      await new Promise((r) => setTimeout(r, 200));
      expect(lines.filter((l) => l.includes('"level":40') || l.includes('"level":50'))).toEqual([]);
    } finally {
      await rpc.close();
    }
  }, 30_000);

  it("a callback URL holding the Connector's token is logged by its origin only", async () => {
    const rpc = await fakeNode();
    lines.length = 0;
    const client = await start(rpc.url);
    try {
      await post(
        client.port,
        '/support/register',
        merged('http://127.0.0.1:9/callback/SECRET-TOKEN/9006/swap'),
      );
      // New blocks after the registration: on a loaded machine the follower may have reached the head before
      // it, and a registration is told only of the heights that come after it.
      rpc.state.head += 10;
      await waitFor(() => lines.some((l) => l.includes('callback delivery failed')), 'a failed post', 20_000);
      expect(lines.some((l) => l.includes('http://127.0.0.1:9/…'))).toBe(true);
      expect(lines.filter((l) => l.includes('SECRET-TOKEN'))).toEqual([]);
    } finally {
      await client.stop();
      await rpc.close();
    }
  }, 30_000);

  it('an RPC of another chain than nativeChainId: nothing is delivered, the error and /health name both ids (never the URL), checked again on every step', async () => {
    // Our contracts have the same address on every chain: an `rpc` of another chain gave that chain's events,
    // labelled with this instance's system chain id (the Classifier then judged swaps on them).
    const rpc = await fakeNode('/v3/SECRET-KEY-0123456789');
    rpc.state.head = 0;
    rpc.state.logs = [refundLog(3)];
    const callbacks = await receiver();
    lines.length = 0;
    const client = await start(rpc.url, 10_000, { nativeChainId: '11155420' });
    const health = async () =>
      (await (await fetch(`http://127.0.0.1:${client.port}/health`)).json()) as {
        status: string;
        checks: { follower: { ok: boolean; error?: string } };
      };
    const wrong = 'the RPC serves chain 97, not the configured 11155420';
    try {
      expect((await post(client.port, '/support/register', merged(callbacks.url))).code).toBe(200);
      rpc.state.head = 10;
      await new Promise((r) => setTimeout(r, 1_500));
      expect(callbacks.bodies).toEqual([]);
      await waitFor(async () => (await health()).status === 'degraded', 'health degraded', 10_000);
      expect((await health()).checks.follower.error).toContain(wrong);
      // A history request: its range could only be read on the wrong chain.
      expect(
        (await post(client.port, '/support/history', { start: 1, end: 5, ...merged(callbacks.url) })).status,
      ).toBe(503);
      const errors = lines.filter((l) => l.includes('"level":50'));
      expect(errors).toHaveLength(1); // once, not on every poll
      expect(errors[0]).toContain(wrong);
      expect(lines.join('\n')).not.toContain('SECRET-KEY');
      expect(JSON.stringify(await health())).not.toContain('SECRET-KEY');

      // The node serves the configured chain (the operator fixed it, or a balancer's other node): followed.
      rpc.state.chainId = '0xaa37dc';
      await waitFor(
        () => callbacks.bodies.some((b) => b.data?.length === 1),
        'the event delivered on the configured chain',
        10_000,
      );
      await waitFor(async () => (await health()).status === 'ok', 'health ok again', 10_000);

      // It serves another chain again (a reconnect to another node): checked on every step, nothing more goes out.
      rpc.state.chainId = '0x61';
      await waitFor(async () => (await health()).status === 'degraded', 'health degraded again', 10_000);
      const delivered = callbacks.bodies.length;
      rpc.state.head = 30;
      await new Promise((r) => setTimeout(r, 1_000));
      expect(callbacks.bodies.length).toBe(delivered);
      expect(callbacks.bodies.flatMap((b) => (b.height > 10 ? [b.height] : []))).toEqual([]);
    } finally {
      await client.stop();
      await rpc.close();
      await callbacks.close();
    }
  }, 40_000);

  it('nativeChainId of the chain the RPC serves: followed as without it', async () => {
    const rpc = await fakeNode();
    rpc.state.head = 0;
    rpc.state.logs = [refundLog(3)];
    const callbacks = await receiver();
    const client = await start(rpc.url, 10_000, { nativeChainId: '97' });
    try {
      expect((await post(client.port, '/support/register', merged(callbacks.url))).code).toBe(200);
      rpc.state.head = 10;
      await waitFor(() => callbacks.bodies.some((b) => b.data?.length === 1), 'the event delivered', 10_000);
    } finally {
      await client.stop();
      await rpc.close();
      await callbacks.close();
    }
  }, 30_000);

  it('logs asked of a node behind the head another node reported are not taken: the event comes later', async () => {
    const rpc = await fakeNode();
    rpc.state.head = 0;
    rpc.state.logs = [refundLog(9)];
    const callbacks = await receiver();
    const client = await start(rpc.url);
    try {
      await post(client.port, '/support/register', merged(callbacks.url));
      // A balancer: the head from a node at 10, the logs from one that has reached 7.
      rpc.state.synced = 7;
      rpc.state.head = 10;
      await new Promise((r) => setTimeout(r, 1_000));
      expect(callbacks.bodies.filter((b) => b.height === 10)).toEqual([]);
      rpc.state.synced = Infinity;
      rpc.state.head = 20;
      await waitFor(() => callbacks.bodies.some((b) => b.height === 20), 'height 20', 10_000);
      expect(callbacks.bodies.flatMap((b) => b.data ?? []).map((d) => d.block.hash)).toEqual([BLOCK_HASH]);
    } finally {
      await client.stop();
      await rpc.close();
      await callbacks.close();
    }
  }, 30_000);
  it('confirmations count on the node that answered the logs: a lagging node on a stale fork delivers nothing, one behind delivers what it holds confirmed', async () => {
    // A balancer: the head is read from a synced node (A, at 100), the logs batch lands on a node (B) stuck at
    // 90 on a fork whose block 88 the chain replaced. Block 90 has 10 confirmations on A, none on B, and B
    // will forget block 88 and its event when it catches up.
    const STALE = '0x' + '88'.repeat(32);
    const b = { head: 90, logs: [{ ...refundLog(88), blockHash: STALE }] as any[] };
    const answer = (c: Call, head: number, logs: any[]) =>
      ({
        eth_chainId: '0x61',
        eth_blockNumber: `0x${head.toString(16)}`,
        eth_getLogs: logs.filter(
          (l) =>
            Number(l.blockNumber) >= Number(c.params[0]?.fromBlock) &&
            Number(l.blockNumber) <= Number(c.params[0]?.toBlock),
        ),
        eth_getBlockByNumber:
          Number(c.params[0]) <= head ? { number: c.params[0], timestamp: '0x10', hash: BLOCK_HASH } : null,
        eth_getBlockByHash: { number: '0x58', timestamp: '0x10', hash: c.params[0] },
        eth_getTransactionReceipt: { transactionHash: '0x' + 'ab'.repeat(32), from: CONTRACT },
      })[c.method] ?? null;
    const rpc = await serve((text, response) => {
      const parsed = JSON.parse(text);
      const calls: Call[] = Array.isArray(parsed) ? parsed : [parsed];
      // Batches (the logs and their block) go to B; single calls (the head) to A.
      const answers = calls.map((c) => ({
        jsonrpc: '2.0',
        id: c.id,
        result: Array.isArray(parsed) ? answer(c, b.head, b.logs) : answer(c, 100, []),
      }));
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]));
    });
    const callbacks = await receiver();
    const client = await start(rpc.url, 10_000, { startBlock: 81, confirmations: 6 });
    try {
      await post(client.port, '/support/register', merged(callbacks.url));
      await new Promise((r) => setTimeout(r, 1_500));
      expect(callbacks.bodies.filter((body) => body.height === 90)).toEqual([]);
      // B moves on to 95 on the chain A follows, and stays 5 blocks behind A: it has blocks 81…85 six deep,
      // which are delivered rather than waiting for a read that lands on a node with 90 six deep.
      b.head = 95;
      b.logs = [];
      await waitFor(() => callbacks.bodies.some((body) => body.height === 85), 'height 85', 10_000);
      await new Promise((r) => setTimeout(r, 500));
      expect(callbacks.bodies.map((body) => body.height)).toEqual([85]);
      // B catches up: block 88 is another block, without the event.
      b.head = 100;
      await waitFor(() => callbacks.bodies.some((body) => body.height === 90), 'height 90', 10_000);
      expect(callbacks.bodies.flatMap((body) => body.data)).toEqual([]);
    } finally {
      await client.stop();
      await rpc.close();
      await callbacks.close();
    }
  }, 30_000);
  it('a history range the node never answers (pruned) ends the task after historyAttempts and frees its slot', async () => {
    const rpc = await fakeNode();
    // A pruned node: the state of blocks below 50 is gone, every read of them fails the same way.
    rpc.state.logsError = (from) => (from < 50 ? 'missing trie node 5c2a… (path ) <nil>' : undefined);
    let prunedReads = 0;
    const logsError = rpc.state.logsError;
    rpc.state.logsError = (from, to) => {
      const error = logsError(from, to);
      if (error) prunedReads++;
      return error;
    };
    const callbacks = await receiver();
    const metrics = new Registry();
    lines.length = 0;
    const client = await start(rpc.url, 10_000, { historyAttempts: 3, startBlock: 90 }, metrics);
    const instance = String(systemChainId);
    const tasks = async () =>
      Number(
        (
          await db.pool.query('SELECT count(*) AS n FROM chain_client_history_tasks WHERE instance = $1', [
            instance,
          ])
        ).rows[0].n,
      );
    try {
      const pruned = await post(client.port, '/support/history', {
        start: 0,
        end: 20,
        ...merged(callbacks.url),
      });
      expect(pruned.code).toBe(200);
      await waitFor(
        () => lines.some((l) => l.includes('history task given up')),
        'the task given up',
        20_000,
      );
      const given = JSON.parse(lines.find((l) => l.includes('history task given up'))!);
      expect(given).toMatchObject({
        lane: expect.stringMatching(/^history:/),
        attempts: 3,
        start: 0,
        end: 20,
      });
      expect(given.task).toEqual(expect.any(String));
      expect(given.err).toContain('missing trie node');
      expect(await tasks()).toBe(0);
      expect(await metrics.getSingleMetricAsString('chain_client_history_tasks_total')).toContain(
        `chain_client_history_tasks_total{instance="${instance}",outcome="failed"} 1`,
      );
      // Not read again once given up.
      const reads = prunedReads;
      await new Promise((r) => setTimeout(r, 1_000));
      expect(prunedReads).toBe(reads);
      // The slot is free and the client serves the next request.
      const readable = await post(client.port, '/support/history', {
        start: 60,
        end: 80,
        ...merged(callbacks.url),
      });
      expect(readable.code).toBe(200);
      await waitFor(
        () => callbacks.bodies.some((b) => b.height === 80),
        'the readable range delivered',
        10_000,
      );
      expect(callbacks.bodies.map((b) => b.height)).toEqual([60, 65, 70, 75, 80]);
    } finally {
      await client.stop();
      await rpc.close();
      await callbacks.close();
    }
  }, 30_000);

  it('a node that caps the logs range: the narrowing failures of a history task spend none of its attempts', async () => {
    const rpc = await fakeNode();
    // A provider answering eth_getLogs of at most 10 blocks: the task's reads narrow until they fit.
    rpc.state.logsError = (from, to) => (to - from + 1 > 10 ? 'query exceeds max block range 10' : undefined);
    const callbacks = await receiver();
    lines.length = 0;
    const client = await start(rpc.url, 10_000, { historyAttempts: 2, startBlock: 90 });
    try {
      const history = await post(client.port, '/support/history', {
        start: 0,
        end: 40,
        ...merged(callbacks.url),
      });
      expect(history.code).toBe(200);
      await waitFor(
        () =>
          callbacks.bodies.some((b) => b.height === 40) ||
          lines.some((l) => l.includes('history task given up')),
        'the task delivered or given up',
        20_000,
      );
      expect(lines.filter((l) => l.includes('history task given up'))).toEqual([]);
      expect(callbacks.bodies.map((b) => b.height)).toEqual([0, 5, 10, 15, 20, 25, 30, 35, 40]);
    } finally {
      await client.stop();
      await rpc.close();
      await callbacks.close();
    }
  }, 30_000);

  it('a TransferOut whose requestor is not UTF-8 (anyone can emit one) is delivered, and the chunks after it: the follower failed every step on it, for good', async () => {
    const out = swapInterface.encodeEventLog('LogNewTransferOut', [
      '0x' + '11'.repeat(32),
      '0x' + '22'.repeat(20),
      '0x' + '33'.repeat(20),
      '0x' + '00'.repeat(20),
      1n,
      '0x' + '44'.repeat(32),
      60n,
      60n,
      1_700_001_000n,
      614n,
      5n,
      '0x' + '55'.repeat(32),
      0n,
      1n,
      0n,
      1_700_000_000n,
      'ZZZZ',
      'lp-1',
      'us',
      'ls',
    ]);
    const data = out.data.replace(Buffer.from('ZZZZ').toString('hex'), 'fe'.repeat(4));
    const rpc = await fakeNode();
    rpc.state.head = 0;
    rpc.state.logs = [{ ...refundLog(3), topics: out.topics, data }];
    const callbacks = await receiver();
    const client = await start(rpc.url);
    try {
      expect((await post(client.port, '/support/register', merged(callbacks.url))).code).toBe(200);
      rpc.state.head = 12;
      await waitFor(
        () => callbacks.bodies.some((b) => b.height === 10),
        'the chunks up to the head delivered',
        15_000,
      );
      const [event] = callbacks.bodies.flatMap((b) => b.data);
      expect(event.type).toBe('TransferOut');
      expect(event.event_parse.requestor).toBe('\uFFFD'.repeat(4));
    } finally {
      await client.stop();
      await rpc.close();
      await callbacks.close();
    }
  }, 30_000);

  it("an endpoint's 429 with Retry-After: nothing is sent to it before that time, then reading goes on", async () => {
    let limit = false;
    let limitedAt: number | undefined;
    const times: number[] = [];
    const rpc = await fakeNode('/', () => {
      times.push(Date.now());
      if (!limit) return;
      limit = false;
      limitedAt = Date.now();
      return { status: 429, headers: { 'retry-after': '2' } };
    });
    rpc.state.head = 0;
    const callbacks = await receiver();
    const client = await start(rpc.url);
    try {
      await post(client.port, '/support/register', merged(callbacks.url));
      await waitFor(() => callbacks.bodies.some((b) => b.height === 0), 'height 0', 10_000);
      limit = true;
      await waitFor(() => limitedAt !== undefined, 'the 429', 10_000);
      rpc.state.head = 10;
      await waitFor(() => callbacks.bodies.some((b) => b.height === 10), 'height 10 after the wait', 10_000);
      const next = times.find((t) => t > limitedAt!)!;
      expect(next - limitedAt!).toBeGreaterThanOrEqual(1_900);
    } finally {
      await client.stop();
      await rpc.close();
      await callbacks.close();
    }
  }, 30_000);

  it('Retry-After as an HTTP date on a 503 is honoured; a huge one is capped, so no endpoint stalls us for long', async () => {
    let refusal: Refusal | undefined;
    const times: number[] = [];
    const rpc = await fakeNode('/', () => {
      times.push(Date.now());
      const answer = refusal;
      refusal = undefined;
      return answer;
    });
    const reader = new ChainReader(rpc.url, [CONTRACT], 10_000, { maxRetryAfterMs: 1_000 });
    const wide = new ChainReader(rpc.url, [CONTRACT], 10_000);
    /** Reads the head until it answers; when it did. */
    const readAgain = async (r: ChainReader) => {
      const deadline = Date.now() + 8_000;
      for (;;) {
        try {
          await r.head();
          return Date.now();
        } catch (err) {
          if (Date.now() > deadline) throw err;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    };
    try {
      // 503 "come back at <date>": 2 to 3 s on (the date has whole seconds).
      refusal = { status: 503, headers: { 'retry-after': new Date(Date.now() + 3_000).toUTCString() } };
      await expect(wide.head()).rejects.toThrow();
      const refusedAt = times.at(-1)!;
      await readAgain(wide);
      expect(times.at(-1)! - refusedAt).toBeGreaterThanOrEqual(1_900);

      // "Come back in an hour", capped to 1 s here (60 s by default).
      refusal = { status: 429, headers: { 'retry-after': '3600' } };
      const asked = Date.now();
      await expect(reader.head()).rejects.toThrow(/retry/i);
      const limitedAt = times.at(-1)!;
      const answeredAt = await readAgain(reader);
      expect(answeredAt - asked).toBeLessThan(2_500);
      expect(times.at(-1)! - limitedAt).toBeGreaterThanOrEqual(900);
    } finally {
      reader.destroy();
      wide.destroy();
      await rpc.close();
    }
  }, 30_000);
});

/** A receiver of per-event posts (history without merge, as the Connector's `historyMerge = false` asks it). */
describe('chain client: a per-event post the receiver never took', () => {
  let db: TestDatabase;
  const log = pino({ level: 'silent' });
  beforeAll(async () => {
    db = await createTestDatabase([chainClientMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("its chunk's update_height does not go out: the height would claim an event the receiver never got", async () => {
    const rpc = await fakeNode();
    rpc.state.head = 20;
    rpc.state.logs = [refundLog(9)];
    // The receiver refuses the first single event post (a proxy's 4xx while the Connector restarts, or
    // the Connector's own 400), and takes everything after it.
    const taken: any[] = [];
    let refused = 0;
    const server = await serve((text, response) => {
      const body = JSON.parse(text);
      if (body.event && refused++ === 0) return void response.writeHead(400).end('{"code":400}');
      taken.push(body);
      response.writeHead(200).end('{"code":200}');
    });
    const url = server.url + '/cb';
    const client = await startChainClient(
      { db: db.pool, log, metrics: new Registry() },
      {
        port: 0,
        rpc: rpc.url,
        systemChainId: '9900',
        contractAddr: CONTRACT,
        confirmations: 0,
        startBlock: 20,
        pollIntervalMs: 100,
        deliveryAttempts: 3,
        keepSettledDays: 7,
      },
    );
    try {
      const response = await fetch(`http://127.0.0.1:${client.port}/support/history`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          start: 6,
          end: 15,
          callback: { on_refunded_out: url, on_height_update: url },
        }),
      });
      expect(((await response.json()) as { code: number }).code).toBe(200);
      await waitFor(() => taken.some((b) => b.height === 15), 'the last chunk of the history', 10_000);
      expect(refused).toBe(1);
      // Height 10 (blocks 6…10) said "done" without its event, and the receiver moved past block 9 for good;
      // without it, height 15 opens a gap at 6…10 and the receiver asks for those blocks again.
      expect(taken.map((b) => b.height)).toEqual([15]);
    } finally {
      await client.stop();
      await rpc.close();
      await server.close();
    }
  }, 30_000);
});
