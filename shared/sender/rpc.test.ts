import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretScrubber } from '../config/redact.js';
import { startHardhatNode, type HardhatNode } from '../devnet/hardhat-node.js';
import { RpcPool, RpcStoppedError, stoppedCall } from './rpc.js';

const SECRET = 'provider-key-3f9a1c77d2e04b5';

/** An endpoint that accepts connections and never answers; `requests()`: how many it was sent. */
async function silentServer(): Promise<{ server: Server; url: string; requests(): number }> {
  let requests = 0;
  const server = createServer(() => void requests++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v3/${SECRET}`,
    requests: () => requests,
  };
}

describe('RpcPool: per-call timeouts, fallback, scrubbed errors', () => {
  let node: HardhatNode;
  let silent: Awaited<ReturnType<typeof silentServer>>;
  beforeAll(async () => {
    [node, silent] = await Promise.all([startHardhatNode({ chainId: 97 }), silentServer()]);
  });
  afterAll(async () => {
    silent?.server.closeAllConnections();
    silent?.server.close();
    await node?.close();
  });
  const pool = (urls: string[]) =>
    new RpcPool({ urls, chainId: 97, timeoutMs: 300, scrub: secretScrubber(urls) });

  it('abandons a hanging endpoint after the timeout and answers from the next one, then sticks to it', async () => {
    const rpc = pool([silent.url, node.rpcUrl]);
    const started = Date.now();
    expect(await rpc.read((p) => p.getBlockNumber())).toBeGreaterThanOrEqual(0);
    expect(Date.now() - started).toBeLessThan(2_000);
    // The working endpoint is now tried first: the hanging one is not asked again (asked first, it would have
    // had the request before its timeout let the call go on to the next).
    const asked = silent.requests();
    await rpc.read((p) => p.getBlockNumber());
    expect(silent.requests()).toBe(asked);
    rpc.destroy();
  });

  it("takes a node's JSON-RPC error as the chain's answer (not retried elsewhere), its text scrubbed", async () => {
    const rpc = pool([node.rpcUrl, silent.url]);
    const asked = silent.requests();
    const error = await rpc
      .read((p) => p.send('eth_getBalance', ['not-an-address', 'latest']))
      .catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    // Not retried on the other endpoint (which would have had the request before its timeout failed the call).
    expect(silent.requests()).toBe(asked);
    rpc.destroy();
  });

  it('fails with every endpoint down, naming no URL; a broadcast reaches the endpoint that works', async () => {
    const down = pool([silent.url, `http://127.0.0.1:9/key/${SECRET}-2`]);
    const error = (await down.read((p) => p.getBlockNumber()).catch((e: Error) => e)) as Error;
    expect(error.message).not.toContain(SECRET);
    expect(error.message.length).toBeGreaterThan(0);
    down.destroy();

    // A key in the host name: a failed lookup quotes the host.
    const inHost = pool([`http://${SECRET}.invalid:8545/`]);
    const lookup = (await inHost.read((p) => p.getBlockNumber()).catch((e: Error) => e)) as Error;
    expect(lookup.message).not.toContain(SECRET);
    inHost.destroy();
    const scrub = secretScrubber(['https://sk-live-0123abcd.rpc.example.com/', 'https://mainnet.infura.io/']);
    expect(scrub('ENOTFOUND sk-live-0123abcd.rpc.example.com')).toBe('ENOTFOUND <rpc>.rpc.example.com');
    expect(scrub('ENOTFOUND mainnet.infura.io')).toBe('ENOTFOUND mainnet.infura.io');

    const rpc = pool([silent.url, node.rpcUrl]);
    const wallet = new Wallet('0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a');
    const raw = await wallet.signTransaction({
      chainId: 97,
      nonce: 0,
      to: wallet.address,
      value: 0n,
      gasLimit: 21_000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      type: 2,
    });
    await rpc.broadcast(raw);
    expect(await rpc.read((p) => p.getTransactionCount(wallet.address))).toBe(1);
    rpc.destroy();
  });

  it('a stop ends a call in flight at once, tries no other endpoint, and fails every later call', async () => {
    const stop = new AbortController();
    const urls = [silent.url, node.rpcUrl];
    const rpc = new RpcPool({
      urls,
      chainId: 97,
      timeoutMs: 20_000,
      scrub: secretScrubber(urls),
      stopSignal: stop.signal,
    });
    const reading = rpc.read((p) => p.getBlockNumber()).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 200));
    const abortedAt = Date.now();
    stop.abort();
    const error = await reading;
    expect(Date.now() - abortedAt).toBeLessThan(250);
    // Not the working endpoint's answer: the stop is not an endpoint's failure to fall back from.
    expect(stoppedCall(error)).toBe(true);
    expect((error as Error).message).not.toContain(SECRET);
    expect(rpc.stopped).toBe(true);
    expect(stoppedCall(await rpc.read((p) => p.getBlockNumber()).catch((e: unknown) => e))).toBe(true);
    expect(stoppedCall(await rpc.broadcast('0x00').catch((e: unknown) => e))).toBe(true);
    rpc.destroy();
  });

  it('destroy() ends a broadcast in flight at once (RpcStoppedError), not at the timeout', async () => {
    const rpc = new RpcPool({
      urls: [silent.url],
      chainId: 97,
      timeoutMs: 20_000,
      scrub: secretScrubber([silent.url]),
    });
    const sending = rpc.broadcast('0x00').catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 200));
    const destroyedAt = Date.now();
    rpc.destroy();
    const error = await sending;
    expect(Date.now() - destroyedAt).toBeLessThan(250);
    expect(stoppedCall(error)).toBe(true);
    expect((error as { original?: unknown }).original).toBeInstanceOf(RpcStoppedError);
  });
});
