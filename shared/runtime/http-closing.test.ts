import net, { type AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createLogger } from '../logging/logger.js';
import type { Pool } from '../db/pool.js';
import { createHttpServer, type ClientErrorCodes } from './http.js';

// DESIGN §5.6 / README "HTTP endpoints of every service": every answer is JSON {code, message}.
const fakeDb = { query: async () => ({ rows: [] }) } as unknown as Pool;

/** A service's own codes for these answers (the relay's, the Agent's and Points' registries have theirs). */
const OWN: ClientErrorCodes = { malformed: 1, timeout: 2, tooLarge: 3, expectationFailed: 4, stopping: 5 };

async function server(
  clientErrorCodes?: ClientErrorCodes,
): Promise<{ app: FastifyInstance; port: number; slowArrived: Promise<void> }> {
  const app = createHttpServer({
    service: 'test',
    log: createLogger({ level: 'silent' }),
    metrics: new Registry(),
    db: fakeDb,
    clientErrorCodes,
  });
  let arrived!: () => void;
  const slowArrived = new Promise<void>((resolve) => (arrived = resolve));
  app.get('/slow', async () => {
    arrived();
    await new Promise((resolve) => setTimeout(resolve, 400));
    return { code: 200, message: 'ok' };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, port: (app.server.address() as AddressInfo).port, slowArrived };
}

/** The bodies of the answers on one socket (Content-Length framed). */
function bodies(text: string): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.includes('\r\n\r\n')) {
    const [head, ...tail] = rest.split('\r\n\r\n');
    const length = Number(/content-length: (\d+)/i.exec(head!)?.[1] ?? 0);
    const after = tail.join('\r\n\r\n');
    out.push(after.slice(0, length));
    rest = after.slice(length);
  }
  return out;
}

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('answers outside a route keep the {code, message} vocabulary', () => {
  it.each([
    ['default codes', undefined, 503],
    ['a service vocabulary', OWN, OWN.stopping],
  ] as const)(
    'a request on a busy keep-alive connection during a graceful stop answers {code, message} (%s)',
    async (_, codes, code) => {
      const started = await server(codes);
      app = started.app;
      const socket = net.connect(started.port, '127.0.0.1');
      socket.on('error', () => undefined);
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
      await started.slowArrived;
      const closing = app.close(); // SIGINT: the runner stops the service while /slow is in flight
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
      await closing;
      await new Promise((resolve) => setTimeout(resolve, 100));
      socket.destroy();
      const answers = bodies(text);
      expect(answers).toHaveLength(2);
      expect(text).toContain('503 Service Unavailable');
      // fastify's own {"error","message","statusCode"} body, which has no `code`, is what comes now.
      expect(JSON.parse(answers[1]!)).toEqual({ code, message: expect.any(String) });
    },
  );

  it.each([
    ['default codes', undefined, 417],
    ['a service vocabulary', OWN, OWN.expectationFailed],
  ] as const)(
    'an Expect header the server does not meet answers 417 with {code, message} (%s)',
    async (_, codes, code) => {
      const started = await server(codes);
      app = started.app;
      const text = await new Promise<string>((resolve) => {
        const socket = net.connect(started.port, '127.0.0.1');
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk.toString()));
        socket.on('close', () => resolve(answer));
        socket.on('error', () => resolve(answer));
        socket.write('GET /health HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n');
      });
      expect(text).toMatch(/^HTTP\/1\.1 417 /);
      const body = text.split('\r\n\r\n').slice(1).join('\r\n\r\n');
      // Node's default answer: chunked, empty body ("0\r\n\r\n").
      expect(JSON.parse(body)).toEqual({ code, message: 'only Expect: 100-continue is supported' });
    },
  );
});
