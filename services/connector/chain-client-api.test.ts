import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChainClientConfig } from '../../shared/config/index.js';
import { register, requestHistory } from './chain-client-api.js';

/**
 * The original chain client keys its history tasks by callback and range: the same request again answers
 * 30209 "callbackUrl is already registered", and the task runs. A retry of ours counted it as a refusal (and a
 * gap fill then went to the RPC instead).
 */
describe('requestHistory against the original answers', () => {
  const app = Fastify();
  const seen = new Set<string>();
  let client: ChainClientConfig;
  beforeAll(async () => {
    app.post('/support/history', async (request) => {
      const body = request.body as { start: number; end: number };
      if (body.start > body.end) return { code: 30209, message: 'start is after end' };
      const key = `${body.start}-${body.end}`;
      if (seen.has(key)) return { code: 30209, message: 'callbackUrl is already registered' };
      seen.add(key);
      return { code: 200, message: 'history task started' };
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    client = {
      url,
      historyUrl: url,
      registerPath: '/support/register',
      historyPath: '/support/history',
      historyMerge: true,
    } as unknown as ChainClientConfig;
  });
  afterAll(() => app.close());

  it('takes "already registered" for the same range as accepted; another refusal is one', async () => {
    await requestHistory(client, 'swap', 'http://127.0.0.1:9/cb', 10, 20);
    await expect(requestHistory(client, 'swap', 'http://127.0.0.1:9/cb', 10, 20)).resolves.toBeUndefined();
    await expect(requestHistory(client, 'swap', 'http://127.0.0.1:9/cb', 30, 25)).rejects.toThrow(
      'history refused: 30209 start is after end',
    );
  });
});

/**
 * `chainClients[].url` / `historyUrl` are base URLs, and the README documents the support routes as `url` +
 * `registerPath`: a chain client behind a path prefix (a gateway's `/bsc`) is asked there, not at the host's root.
 */
describe('support routes of a chain client behind a path prefix', () => {
  const app = Fastify();
  const asked: string[] = [];
  let client: ChainClientConfig;
  beforeAll(async () => {
    for (const route of ['/bsc/support/register', '/bsc/support/history', '/bsc/support/register_reputation'])
      app.post(route, async (request) => {
        asked.push(request.url);
        return { code: 200, message: 'ok' };
      });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    client = {
      url: `${url}/bsc`,
      historyUrl: `${url}/bsc/`, // a trailing slash makes no second one
      registerPath: '/support/register',
      historyPath: '/support/history',
      historyMerge: true,
    } as unknown as ChainClientConfig;
  });
  afterAll(() => app.close());

  it("posts registrations and history requests under the base URL's path", async () => {
    await expect(register(client, 'swap', 'http://127.0.0.1:9/cb')).resolves.toBe('registered');
    await expect(register(client, 'reputation', 'http://127.0.0.1:9/cb')).resolves.toBe('registered');
    await expect(requestHistory(client, 'swap', 'http://127.0.0.1:9/cb', 10, 20)).resolves.toBeUndefined();
    expect(asked).toEqual([
      '/bsc/support/register',
      '/bsc/support/register_reputation',
      '/bsc/support/history',
    ]);
  });
});
