import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/wait.js';
import { GapFiller, type GapFillOptions } from './gap-fill.js';
import { RpcAnswerError, RpcReader, RpcReaderStoppedError } from './rpc-reader.js';

/** A GapFiller over an in-memory stored height, with its log lines and gauges captured. */
function harness(overrides: Partial<GapFillOptions> & { stored?: number } = {}) {
  const lines: Array<Record<string, any>> = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const registry = new Registry();
  const gauge = (name: string) =>
    new Gauge({ name, help: 'x', labelNames: ['chain', 'stream'] as const, registers: [registry] });
  const state = { stored: overrides.stored ?? 10, rpcCalls: 0, historyCalls: 0 };
  const options: GapFillOptions = {
    log,
    metrics: { stuck: gauge('stuck'), gapFrom: gauge('from'), gapTo: gauge('to') },
    retryMs: 60_000,
    historyTimeoutMs: 300,
    reportIntervalMs: 1_000,
    tickMs: 20,
    storedHeight: async () => state.stored,
    requestHistory: async () => void (state.historyCalls += 1),
    fillFromRpc: async (_chain, _stream, target) => {
      state.rpcCalls += 1;
      state.stored = Math.min(target, state.stored + 7);
      return state.stored;
    },
    ...overrides,
  };
  const filler = new GapFiller(options);
  const metric = async (name: string) =>
    (await registry.getSingleMetric(name)!.get()).values.find((v) => v.labels.stream === 'swap')?.value;
  const messages = (msg: string) => lines.filter((l) => l.msg === msg);
  return { filler, state, lines, messages, metric };
}

describe('gap filler', () => {
  it('reads the gap from the RPC at once when the chain client refuses the history request', async () => {
    const h = harness({
      historyTimeoutMs: 60_000,
      requestHistory: async () => {
        throw new Error('history refused: 30209 history task failed');
      },
    });
    const started = Date.now();
    h.filler.report('9006', 'swap', 10, 40);
    await waitFor(() => h.state.stored === 40, 'the gap filled', 5_000);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(h.state.rpcCalls).toBe(5); // bounded ranges: 7 blocks each
    expect(h.messages('history did not arrive: reading the gap from the RPC')[0]).toMatchObject({
      from: 11,
      to: 40,
      reason: 'history refused: 30209 history task failed',
    });
    await waitFor(() => h.messages('gap filled').length === 1, 'gap filled logged', 2_000);
    expect(h.filler.health()).toEqual({ status: 'ok' });
    await h.filler.stop();
  });

  it('leaves a gap to the history while it makes progress, and follows the highest reported height', async () => {
    const h = harness({ historyTimeoutMs: 400 });
    h.filler.report('9006', 'swap', 10, 30);
    h.filler.report('9006', 'swap', 10, 35); // a later live chunk while waiting
    for (const height of [15, 20, 25, 30, 35]) {
      await new Promise((r) => setTimeout(r, 150));
      h.state.stored = height; // history chunks arrive, each within the timeout
    }
    await waitFor(() => h.messages('gap filled').length === 1, 'gap filled', 2_000);
    expect(h.state.rpcCalls).toBe(0);
    expect(h.state.historyCalls).toBe(1);
    expect(h.messages('gap filled')[0]).toMatchObject({ source: 'history', height: 35 });
    await h.filler.stop();
  });

  it('asks the history again from the stored height when it went back (chunks lost in a database crash)', async () => {
    const requests: Array<[number, number]> = [];
    const h = harness({
      historyTimeoutMs: 60_000,
      requestHistory: async (_chain, _stream, start, end) => void requests.push([start, end]),
    });
    h.filler.report('9006', 'swap', 10, 40);
    h.state.stored = 25; // history chunks arrive
    await waitFor(() => h.filler.health().status === 'ok' && requests.length === 1, 'first request', 2_000);
    await new Promise((r) => setTimeout(r, 100));
    h.state.stored = 15; // the crash lost the chunks up to 25 whole
    await waitFor(() => requests.length === 2, 'the history asked again', 2_000);
    expect(requests).toEqual([
      [11, 40],
      [16, 40],
    ]);
    expect(
      h.messages(
        'the stored height went back (writes lost in a database crash): requesting history from it',
      )[0],
    ).toMatchObject({ was: 25, stored: 15 });
    h.state.stored = 40;
    await waitFor(() => h.messages('gap filled').length === 1, 'gap filled', 2_000);
    expect(h.state.rpcCalls).toBe(0);
    await h.filler.stop();
  });

  it('says a stream is stuck (health, gauges, one log line per state change and per interval) until the RPC answers', async () => {
    let rpcUp = false;
    const h = harness({
      historyTimeoutMs: 200,
      reportIntervalMs: 600,
      fillFromRpc: async (_chain, _stream, target) => {
        if (!rpcUp) throw new Error('rpc-urls.97: eth_blockNumber failed: server response 503');
        return (h.state.stored = target);
      },
    });
    h.filler.report('9006', 'swap', 10, 50);
    await waitFor(() => h.filler.health().status === 'degraded', 'degraded', 3_000);
    expect(h.filler.health()).toMatchObject({
      status: 'degraded',
      stuck: [
        {
          chain: '9006',
          stream: 'swap',
          waitingFor: { from: 11, to: 50 },
          source: 'rpc',
          rpcError: 'rpc-urls.97: eth_blockNumber failed: server response 503',
        },
      ],
    });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await h.metric('stuck')).toBeGreaterThanOrEqual(1);
    expect(await h.metric('from')).toBe(11);
    expect(await h.metric('to')).toBe(50);
    // Many retries, but one failure line, one "stuck" line, and a repeat per reportIntervalMs.
    expect(h.messages('reading the gap from the RPC failed; retrying')).toHaveLength(1);
    expect(h.messages('stream stuck')).toHaveLength(1);
    expect(h.messages('stream still stuck').length).toBeGreaterThanOrEqual(1);
    expect(h.messages('stream still stuck').length).toBeLessThanOrEqual(3);

    rpcUp = true;
    await waitFor(() => h.state.stored === 50, 'caught up', 10_000);
    await waitFor(() => h.messages('stuck stream caught up').length === 1, 'caught-up line', 2_000);
    expect(h.filler.health()).toEqual({ status: 'ok' });
    expect(await h.metric('stuck')).toBe(0);
    expect(await h.metric('from')).toBe(0);
    expect(h.messages('the RPC answers again; filling the gap')).toHaveLength(1);
    await h.filler.stop();
  });

  it('a read the stop cut off is no RPC failure: not logged, not counted, not shown as the RPC error', async () => {
    const stop = new AbortController();
    let reads = 0;
    const h = harness({
      historyTimeoutMs: 50,
      fillFromRpc: async () => {
        reads += 1;
        if (stop.signal.aborted) throw new RpcReaderStoppedError('rpc-urls.97');
        return new Promise<number>((_, reject) =>
          stop.signal.addEventListener('abort', () => reject(new RpcReaderStoppedError('rpc-urls.97'))),
        );
      },
    });
    h.filler.report('9006', 'swap', 10, 40);
    await waitFor(() => reads === 1, 'the RPC read', 2_000);
    // The runner's stop signal comes before the Connector's own stop: the filler waits, without a failure.
    stop.abort();
    await new Promise((r) => setTimeout(r, 150));
    expect(reads).toBeGreaterThan(1);
    expect(h.messages('reading the gap from the RPC failed; retrying')).toEqual([]);
    expect(JSON.stringify(h.filler.health())).not.toContain('rpcError');
    const stoppedAt = Date.now();
    await h.filler.stop();
    expect(Date.now() - stoppedAt).toBeLessThan(500);
    expect(h.messages('gap filled')).toEqual([]);
  });
});

describe('rpc reader', () => {
  async function node(answer: (body: any) => unknown) {
    const server = http.createServer((req, res) => {
      let data = '';
      req.on('data', (c) => (data += c));
      req.on('end', () => {
        const body = JSON.parse(data);
        const one = (r: any) => ({ jsonrpc: '2.0', id: r.id, result: answer(r) });
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(Array.isArray(body) ? body.map(one) : one(body)));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v3/SECRETAPIKEY123`,
      close: () => new Promise((r) => server.close(r)),
    };
  }

  it('refuses answers that are not what JSON-RPC promises, naming the RPC by its key, never its URL', async () => {
    const rpc = await node((r) =>
      r.method === 'eth_getLogs'
        ? [{ address: 'nope', topics: [], data: '0x', blockNumber: '0x1' }]
        : r.method === 'eth_getBlockByNumber' || r.method === 'eth_getBlockByHash'
          ? null
          : r.method === 'eth_chainId'
            ? '0x61'
            : '0x10',
    );
    const reader = new RpcReader(rpc.url, 97, 'rpc-urls.97', 2_000);
    try {
      expect(await reader.head()).toBe(16);
      const logs = reader.logs(1, 5, ['0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512']);
      await expect(logs).rejects.toThrow(/rpc-urls\.97: unexpected eth_getLogs answer/);
      await expect(reader.blockByNumber(3)).rejects.toThrow('rpc-urls.97: block 3 not found');
      await expect(reader.block('0x' + 'ab'.repeat(32))).rejects.toThrow(
        `rpc-urls.97: block 0x${'ab'.repeat(32)} not found`,
      );
      expect(await reader.logs(1, 5, [])).toEqual([]); // no address filter: nothing is asked
    } finally {
      reader.destroy();
      await rpc.close();
    }
    // The node gone: the error names the key, not the URL with its API key.
    const gone = new RpcReader(rpc.url, 97, 'rpc-urls.97', 2_000);
    try {
      const error = await gone.head().then(
        () => undefined,
        (err: Error) => err,
      );
      // Its first call is the check of the chain it serves.
      expect(error?.message).toMatch(/^rpc-urls\.97: eth_chainId failed/);
      expect(error?.message).not.toContain('SECRETAPIKEY123');
      expect(error?.message).not.toContain(new URL(rpc.url).host);
    } finally {
      gone.destroy();
    }
  });

  it('takes no logs from a node that has not reached the last block asked (a balancer behind the head)', async () => {
    let synced = 3;
    const rpc = await node((r) =>
      r.method === 'eth_chainId'
        ? '0x61'
        : r.method === 'eth_getLogs'
          ? []
          : r.method === 'eth_getBlockByNumber'
            ? Number(r.params[0]) <= synced
              ? { number: r.params[0], timestamp: '0x10', hash: '0x' + '11'.repeat(32) }
              : null
            : '0x10',
    );
    const reader = new RpcReader(rpc.url, 97, 'rpc-urls.97', 2_000);
    try {
      const address = ['0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'];
      await expect(reader.logs(1, 5, address)).rejects.toThrow('rpc-urls.97: block 5 not found');
      synced = 5;
      expect(await reader.logs(1, 5, address)).toEqual([]);
    } finally {
      reader.destroy();
      await rpc.close();
    }
  });

  it('reads nothing from an RPC of another chain, and checks again after the check itself failed', async () => {
    let chainId: string | undefined = '0x1';
    const asked: string[] = [];
    const rpc = await node((r) => {
      asked.push(r.method);
      if (r.method === 'eth_chainId') return chainId;
      return r.method === 'eth_getLogs' ? [] : '0x10';
    });
    const reader = new RpcReader(rpc.url, 97, 'rpc-urls.97', 2_000);
    try {
      const wrong = 'rpc-urls.97: the RPC serves chain 1, not the configured 97';
      await expect(reader.head()).rejects.toThrow(wrong);
      await expect(reader.logs(1, 5, ['0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'])).rejects.toThrow(wrong);
      // Refused for good: asked once, and no read was sent.
      expect(asked).toEqual(['eth_chainId']);
    } finally {
      reader.destroy();
    }
    // A check without a usable answer is not a verdict: the next call checks again.
    chainId = undefined;
    asked.length = 0;
    const later = new RpcReader(rpc.url, 97, 'rpc-urls.97', 2_000);
    try {
      await expect(later.head()).rejects.toThrow(/unexpected eth_chainId answer/);
      chainId = '0x61';
      expect(await later.head()).toBe(16);
      expect(await later.head()).toBe(16);
      expect(asked).toEqual(['eth_chainId', 'eth_chainId', 'eth_blockNumber', 'eth_blockNumber']);
    } finally {
      later.destroy();
      await rpc.close();
    }
  });

  it('a stop ends a read in flight at once (RpcReaderStoppedError, not an outage), and every later one', async () => {
    const hung = http.createServer(() => undefined); // takes the request, never answers
    await new Promise<void>((r) => hung.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(hung.address() as AddressInfo).port}/v3/SECRETAPIKEY123`;
    const stop = new AbortController();
    const reader = new RpcReader(url, 97, 'rpc-urls.97', 20_000, stop.signal);
    const destroyed = new RpcReader(url, 97, 'rpc-urls.97', 20_000);
    try {
      const reading = reader.head().catch((err: unknown) => err);
      const other = destroyed.blockByNumber(3).catch((err: unknown) => err);
      await new Promise((r) => setTimeout(r, 200));
      const abortedAt = Date.now();
      stop.abort();
      destroyed.destroy();
      const [error, otherError] = await Promise.all([reading, other]);
      expect(Date.now() - abortedAt).toBeLessThan(250);
      for (const e of [error, otherError]) {
        expect(e).toBeInstanceOf(RpcReaderStoppedError);
        expect(e).not.toBeInstanceOf(RpcAnswerError);
      }
      expect(reader.stopped).toBe(true);
      await expect(reader.logs(1, 5, ['0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'])).rejects.toBeInstanceOf(
        RpcReaderStoppedError,
      );
    } finally {
      reader.destroy();
      hung.closeAllConnections();
      await new Promise((r) => hung.close(r));
    }
  });
});
