import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../logging/logger.js';
import type { Pool } from '../db/pool.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import net, { type AddressInfo } from 'node:net';
import { rawAnswer } from '../../test/support/raw-http.js';
import { createHttpServer, DEFAULT_BODY_LIMIT, REQUEST_TIMEOUT_MS, type HealthCheck } from './http.js';

describe('GET /health with checks contributed by a service', () => {
  let db: TestDatabase;
  beforeAll(async () => void (db = await createTestDatabase()));
  afterAll(async () => db?.drop());

  async function health(healthChecks: Record<string, HealthCheck>, pool: Pool = db.pool) {
    const app = createHttpServer({
      service: 'test',
      log: createLogger({ level: 'silent' }),
      metrics: new Registry(),
      db: pool,
      healthChecks,
    });
    try {
      const reply = await app.inject({ method: 'GET', url: '/health' });
      return { status: reply.statusCode, body: reply.json() };
    } finally {
      await app.close();
    }
  }

  it('is ok (200) when the database and every check are ok', async () => {
    const { status, body } = await health({ streams: () => ({ status: 'ok' }) });
    expect(status).toBe(200);
    expect(body).toMatchObject({
      code: 200,
      message: 'ok',
      status: 'ok',
      service: 'test',
      checks: { database: { ok: true }, streams: { ok: true, status: 'ok' } },
    });
  });

  it('is degraded with HTTP 200 when a check says degraded, with its details; the others still answer', async () => {
    const { status, body } = await health({
      streams: async () => ({
        status: 'degraded',
        stuck: [{ chain: '9006', waitingFor: { from: 11, to: 40 } }],
      }),
      other: () => ({ status: 'ok' }),
    });
    expect(status).toBe(200);
    expect(body.status).toBe('degraded');
    expect(body).toMatchObject({ code: 200, message: 'degraded: streams' });
    expect(body.checks.streams).toEqual({
      ok: false,
      status: 'degraded',
      stuck: [{ chain: '9006', waitingFor: { from: 11, to: 40 } }],
    });
    expect(body.checks.other.ok).toBe(true);
    expect(body.checks.database.ok).toBe(true);
  });

  it('is unavailable (503) when a check says so, throws, or when the database does not answer', async () => {
    const thrown = await health({
      streams: () => ({ status: 'degraded' }),
      broken: () => {
        throw new Error('boom');
      },
    });
    expect(thrown.status).toBe(503);
    expect(thrown.body.status).toBe('unavailable');
    expect(thrown.body.checks.broken).toMatchObject({
      ok: false,
      status: 'unavailable',
      error: "failed; the service's log has the details",
    });
    expect(thrown.body.checks.streams.status).toBe('degraded');

    const failingPool = {
      query: () =>
        Promise.reject(
          Object.assign(new Error('connect ECONNREFUSED 10.20.30.40:5432'), { code: 'ECONNREFUSED' }),
        ),
    } as unknown as Pool;
    const noDb = await health({ streams: () => ({ status: 'degraded' }) }, failingPool);
    expect(noDb.status).toBe(503);
    expect(noDb.body).toMatchObject({
      code: 503,
      message: 'unavailable: database, streams',
      status: 'unavailable',
      checks: {
        database: { ok: false, error: "failed (ECONNREFUSED); the service's log has the details" },
        streams: { status: 'degraded' },
      },
    });
  });

  it("shows a failing check's code, never the driver's text (hosts, users), which goes to the log once", async () => {
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const pool = {
      query: () =>
        Promise.reject(
          Object.assign(new Error('password authentication failed for user "points_ro" at db.internal'), {
            code: '28P01',
          }),
        ),
    } as unknown as Pool;
    const app = createHttpServer({
      service: 't',
      log,
      metrics: new Registry(),
      db: pool,
      healthChecks: {
        thrower: () => {
          throw new Error('getaddrinfo ENOTFOUND broker.internal');
        },
      },
    });
    try {
      const answers = [await app.inject({ url: '/health' }), await app.inject({ url: '/health' })];
      for (const answer of answers) {
        expect(answer.body).not.toMatch(/internal|points_ro/);
        expect(answer.json().checks).toMatchObject({
          database: { error: "failed (28P01); the service's log has the details" },
          thrower: { error: "failed; the service's log has the details" },
        });
      }
      // Logged with its text, once for the two probes.
      const logged = lines.map((line) => JSON.parse(line) as { check?: string; err?: string });
      expect(logged.filter((line) => line.check === 'database').map((line) => line.err)).toEqual([
        'password authentication failed for user "points_ro" at db.internal',
      ]);
      expect(logged.filter((line) => line.check === 'thrower')).toHaveLength(1);
    } finally {
      await app.close();
    }
  });
});

describe('the error vocabulary every HTTP service starts with', () => {
  let db: TestDatabase;
  beforeAll(async () => void (db = await createTestDatabase()));
  afterAll(async () => db?.drop());
  const server = () =>
    createHttpServer({
      service: 't',
      log: createLogger({ level: 'silent' }),
      metrics: new Registry(),
      db: db.pool,
    });

  it('answers an unknown route with 404 {code, message}, and a malformed body with its 4xx {code, message}', async () => {
    const app = server();
    app.post('/echo', async (request) => request.body);
    try {
      const missing = await app.inject({ method: 'GET', url: '/nothing?x=1' });
      expect(missing.statusCode).toBe(404);
      expect(missing.json()).toEqual({ code: 404, message: 'no route GET /nothing' });
      const bad = await app.inject({
        method: 'POST',
        url: '/echo',
        headers: { 'content-type': 'application/json' },
        payload: '{',
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.json()).toMatchObject({ code: 400 });
    } finally {
      await app.close();
    }
  });

  it('answers a path parameter the router refuses (too long, bad %-encoding) as an unknown route', async () => {
    const app = server();
    app.get('/things/:id', async (request) => ({ id: (request.params as { id: string }).id }));
    try {
      expect((await app.inject({ method: 'GET', url: `/things/${'a'.repeat(100)}` })).statusCode).toBe(200);
      for (const url of [`/things/${'a'.repeat(101)}`, '/things/%E0%A4%A', '/things/%zz']) {
        const answer = await app.inject({ method: 'GET', url });
        expect(answer.statusCode, url).toBe(404);
        expect(answer.json(), url).toEqual({ code: 404, message: `no route GET ${url}` });
      }
    } finally {
      await app.close();
    }
  });
});

/** What a slow or oversized client can take from any service, with nothing but sockets. */
describe('limits every HTTP service starts with', () => {
  let db: TestDatabase;
  beforeAll(async () => void (db = await createTestDatabase()));
  afterAll(async () => db?.drop());
  const listening = async (options: { requestTimeoutMs?: number } = {}) => {
    const app = createHttpServer({
      service: 't',
      log: createLogger({ level: 'silent' }),
      metrics: new Registry(),
      db: db.pool,
      ...options,
    });
    app.post('/small', async () => ({ code: 0 }));
    app.post('/large', { bodyLimit: 2 * DEFAULT_BODY_LIMIT }, async () => ({ code: 0 }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { app, port: (app.server.address() as AddressInfo).port };
  };

  it('refuses a body over 64 KiB before reading it, to a route or to no route; a route may take more', async () => {
    const { app, port } = await listening();
    const post = (path: string, bytes: number) =>
      fetch(`http://127.0.0.1:${port}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ x: 'a'.repeat(bytes) }),
      });
    try {
      for (const path of ['/small', '/no-such-route']) {
        const answer = await post(path, DEFAULT_BODY_LIMIT);
        expect([path, answer.status]).toEqual([path, 413]);
        expect(await answer.json()).toMatchObject({ code: 413 });
      }
      expect((await post('/large', DEFAULT_BODY_LIMIT)).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('closes a request not sent whole in time, so a stop is not held by it', async () => {
    const { app, port } = await listening({ requestTimeoutMs: 500 });
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    const closed = new Promise<string>((resolve) => {
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.on('close', () => resolve(answer));
    });
    await new Promise((resolve) => socket.once('connect', resolve));
    // Headers and part of a body, then nothing.
    socket.write(
      'POST /small HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a',
    );
    try {
      expect(app.server.requestTimeout).toBe(500);
      const started = Date.now();
      expect(await closed).toMatch(/^HTTP\/1\.1 408/);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      socket.destroy();
      await app.close();
    }
  });

  it('closes the socket of a timed-out request whose client keeps its own side open; a stop is not held', async () => {
    const { app, port } = await listening({ requestTimeoutMs: 500 });
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    socket.on('error', () => undefined);
    let answer = '';
    const ended = new Promise<void>((resolve) => {
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.on('end', () => resolve());
    });
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      'POST /small HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a',
    );
    try {
      await ended;
      expect(answer).toMatch(/^HTTP\/1\.1 408/);
      expect(answer).toContain('"code":408');
      const stopped = await Promise.race([
        app.close().then(() => 'stopped'),
        new Promise((resolve) => setTimeout(() => resolve('still held after 5 s'), 5_000)),
      ]);
      expect(stopped).toBe('stopped');
    } finally {
      socket.destroy();
      await app.close();
    }
  });

  it('bounds every request by default', async () => {
    const { app } = await listening();
    try {
      expect(app.server.requestTimeout).toBe(REQUEST_TIMEOUT_MS);
    } finally {
      await app.close();
    }
  });
});

/** What Node's HTTP parser refuses before any route: `{code, message}` too, with the service's own codes. */
describe("answers to requests Node's parser refuses", () => {
  let db: TestDatabase;
  beforeAll(async () => void (db = await createTestDatabase()));
  afterAll(async () => db?.drop());

  it.each([
    ['default codes', undefined, [400, 431]],
    [
      'a service vocabulary',
      { malformed: 30226, timeout: 30227, tooLarge: 30228, expectationFailed: 30229, stopping: 30230 },
      [30226, 30228],
    ],
  ] as const)('a malformed request line and headers too large (%s)', async (_, codes, expected) => {
    const app = createHttpServer({
      service: 't',
      log: createLogger({ level: 'silent' }),
      metrics: new Registry(),
      db: db.pool,
      clientErrorCodes: codes,
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as AddressInfo).port;
    try {
      const malformed = await rawAnswer(port, 'GE(T / HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(malformed.status).toBe(400);
      expect(malformed.body).toEqual({ code: expected[0], message: 'the request is not valid HTTP' });
      const long = await rawAnswer(port, `GET /health?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(long.status).toBe(431);
      expect(long.body).toEqual({
        code: expected[1],
        message: 'the request line or its headers are too large',
      });
    } finally {
      await app.close();
    }
  });
});
