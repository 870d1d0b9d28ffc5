import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { swapInterface } from '../../shared/otmoic/abi.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
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

/**
 * A JSON-RPC node: `fail(calls)` answers a batch with an HTTP status, or never ('hang'). `synced` is the block
 * the node has reached, which may be behind the `head` another node behind the same balancer reported: it
 * knows no block above it, and eth_getLogs answers nothing above it, as such nodes do.
 */
async function fakeNode(path = '/', fail: (calls: Call[]) => number | 'hang' | void = () => {}) {
  const state = { head: 100, synced: Infinity, logs: [] as any[] };
  const known = (n: number) => n <= state.synced;
  const result = (c: Call) =>
    ({
      eth_chainId: '0x61',
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
    if (failure) return void response.writeHead(failure).end('down');
    const answers = calls.map((c) => ({ jsonrpc: '2.0', id: c.id, result: result(c) }));
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
  const start = (rpc: string, rpcTimeoutMs = 10_000) =>
    startChainClient(
      { db: db.pool, log, metrics: new Registry() },
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
      await waitFor(() => lines.some((l) => l.includes('callback delivery failed')), 'a failed post', 20_000);
      expect(lines.some((l) => l.includes('http://127.0.0.1:9/…'))).toBe(true);
      expect(lines.filter((l) => l.includes('SECRET-TOKEN'))).toEqual([]);
    } finally {
      await client.stop();
      await rpc.close();
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
});
