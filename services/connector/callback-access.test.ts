import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/config/index.js';
import { freePort } from '../../shared/net/free-port.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { serviceContext } from '../../test/support/service-context.js';
import { waitFor } from '../../test/support/wait.js';
import { connectorService } from './index.js';
import { connectorMigrations } from './migrations.js';

// The longest token the configuration takes: a path parameter beyond fastify's default limit of 100.
const TOKEN = 'Tk_0123456789abcdefghij-XYZ'.padEnd(512, 'x');

/** A chain client that accepts every registration and history request and records them. */
async function recordingChainClient() {
  const calls: Array<{ path: string; body: any }> = [];
  const server = http.createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      calls.push({ path: req.url!, body: JSON.parse(data) });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ code: 200, message: 'register succeed' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise((r) => server.close(r)),
  };
}

/**
 * Writes `head` (a request's line and headers, no body) on a fresh socket: the answer's status if the server
 * answers within `ms`, else undefined (it is still waiting for the body).
 */
async function statusWithoutBody(port: number, head: string, ms: number): Promise<number | undefined> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  try {
    return await new Promise<number | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), ms);
      socket.once('data', (chunk) => {
        clearTimeout(timer);
        resolve(Number(chunk.toString().split(' ')[1]));
      });
      socket.write(head);
    });
  } finally {
    socket.destroy();
  }
}

/** The real Connector service on a port, with `extra` [connector] keys, its log lines captured. */
async function startConnector(db: TestDatabase, client: { url: string }, extra: string) {
  const port = await freePort();
  const lines: string[] = [];
  const context = await serviceContext(
    db,
    `[connector]\nport = ${port}\ncallbackUrl = "http://127.0.0.1:${port}/callback"\n${extra}
[rpc-urls]\n97 = "http://127.0.0.1:1"
[[chainClients]]\nurl = "${client.url}"\nhistoryUrl = "${client.url}"\ninitBlockHeight = 42\nchainId = "9006"\nnativeChainId = "97"
registerPath = "/support/register"\nhistoryPath = "/support/history"\ncontractAddr = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
reputationContractAddr = "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0"`,
    ['connector', 'chainClients', 'rpc-urls'],
  );
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  const service = await connectorService.start({ ...context, log });
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as { code: number; message: string } };
  };
  return {
    port,
    lines,
    post,
    openapi: async () => (await fetch(`http://127.0.0.1:${port}/openapi.json`)).text(),
    async stop() {
      await service.stop();
      await context.close();
    },
  };
}

describe('connector callback route: who may post', () => {
  let db: TestDatabase;
  let client: Awaited<ReturnType<typeof recordingChainClient>>;
  const height = async () =>
    (await db.pool.query(`SELECT height FROM connector_heights WHERE stream = 'swap'`)).rows[0]?.height;

  beforeAll(async () => {
    db = await createTestDatabase([connectorMigrations]);
    client = await recordingChainClient();
  });
  beforeEach(async () => {
    await db.pool.query(`DELETE FROM connector_heights`);
    client.calls.length = 0;
  });
  afterAll(async () => {
    await client?.close();
    await db?.drop();
  });

  it('with connector.callbackToken: registers URLs that carry it, and refuses forged posts without it as an unknown route', async () => {
    const connector = await startConnector(db, client, `callbackToken = "${TOKEN}"`);
    try {
      await waitFor(() => client.calls.length >= 2, 'both registrations', 10_000);
      const registered = client.calls.find((c) => c.path === '/support/register')!;
      expect(registered.body.callback.on_height_update).toBe(
        `${new URL(registered.body.callback.on_height_update).origin}/callback/${TOKEN}/9006/swap`,
      );
      // A forged height far ahead, without the token or with a wrong one: nothing moves, as for no route.
      const forged = { type: 'update_height', height: 50 };
      const withoutToken = await connector.post('/callback/9006/swap', forged);
      expect(withoutToken).toEqual({
        status: 404,
        body: { code: 404, message: 'no route POST /callback/9006/swap' },
      });
      const wrong = `/callback/${[...TOKEN].reverse().join('')}/9006/swap`;
      expect(await connector.post(wrong, forged)).toEqual({
        status: 404,
        body: { code: 404, message: `no route POST ${wrong.slice(0, 200)}` },
      });
      expect(await height()).toBe('42');
      // With the token: taken (a known height, so no block timestamp is needed).
      expect(
        await connector.post(`/callback/${TOKEN}/9006/swap`, { type: 'update_height', height: 40 }),
      ).toEqual({
        status: 200,
        body: { code: 200, message: 'already processed' },
      });
      // The OpenAPI document names the token's place, never its value.
      const document = await connector.openapi();
      expect(JSON.parse(document).paths).toHaveProperty(['/callback/{token}/{chainId}/{stream}']);
      expect(document).not.toContain(TOKEN.slice(0, 40));
      // The token is never echoed nor logged, even where the request's URL is.
      const unknown = await connector.post(`/callback/${TOKEN}/9006/swap/more`, forged);
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual({ code: 404, message: 'no route POST /callback/***/9006/swap/more' });
      expect(connector.lines.some((l) => l.includes('/callback/***/9006/swap'))).toBe(true);
    } finally {
      await connector.stop();
    }
    const log = connector.lines.join('\n');
    expect(log).not.toContain(TOKEN.slice(0, 40));
    expect(log).not.toMatch(/callback route is open to anyone/);
  }, 30_000);

  it('with connector.allowIps: refuses other client IPs with 403 and changes nothing', async () => {
    const connector = await startConnector(db, client, `allowIps = ["10.0.0.0/8"]`);
    try {
      expect(await connector.post('/callback/9006/swap', { type: 'update_height', height: 50 })).toEqual({
        status: 403,
        body: { code: 403, message: 'this client IP may not use this route' },
      });
      expect(await height()).toBe('42');
    } finally {
      await connector.stop();
    }
    expect(connector.lines.join('\n')).not.toMatch(/callback route is open to anyone/);
  }, 30_000);

  it('refuses a forged post before reading its body: a wrong token or another client IP costs no parsing', async () => {
    // Up to 10 MiB is read and parsed for a chain client's callback: not for someone who may not post one.
    const wrong = `/callback/${'w'.repeat(40)}/9006/swap`;
    const postRaw = async (port: number, path: string, body: string) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      return { status: response.status, body: await response.json() };
    };
    const head = (path: string) =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 8000000\r\n\r\n`;
    const withToken = await startConnector(db, client, `callbackToken = "${TOKEN}"`);
    try {
      // A malformed body behind a wrong token is an unknown route too, not a JSON error.
      expect(await postRaw(withToken.port, wrong, '{')).toEqual({
        status: 404,
        body: { code: 404, message: `no route POST ${wrong}` },
      });
      // Answered without waiting for the 8 MB it announces.
      expect(await statusWithoutBody(withToken.port, head(wrong), 2_000)).toBe(404);
    } finally {
      await withToken.stop();
    }
    const fenced = await startConnector(db, client, `allowIps = ["10.0.0.0/8"]`);
    try {
      expect(await postRaw(fenced.port, '/callback/9006/swap', '{')).toEqual({
        status: 403,
        body: { code: 403, message: 'this client IP may not use this route' },
      });
      expect(await statusWithoutBody(fenced.port, head('/callback/9006/swap'), 2_000)).toBe(403);
    } finally {
      await fenced.stop();
    }
  }, 30_000);

  it('configuration: a token of fewer than 16 or non URL-safe characters is refused without repeating it', () => {
    for (const bad of ['short-token', 'has a space in it, sixteen+', 'x'.repeat(513)]) {
      let error: unknown;
      try {
        loadConfig({
          text: `[connector]\nport = 1\ncallbackUrl = "http://127.0.0.1:1/callback"\ncallbackToken = "${bad}"`,
          env: {},
          require: ['connector'],
        });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect(String((error as Error).message)).toMatch(
        /connector\.callbackToken: must be 16 to 512 URL-safe/,
      );
      expect(String((error as Error).message)).not.toContain(bad);
    }
  });

  it('with neither: warns once at start-up that the callback route is open', async () => {
    const connector = await startConnector(db, client, '');
    await connector.stop();
    expect(connector.lines.filter((l) => /callback route is open to anyone/.test(l))).toHaveLength(1);
  }, 30_000);
});
