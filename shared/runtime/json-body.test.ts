import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Pool } from '../db/pool.js';
import { createLogger } from '../logging/logger.js';
import { createHttpServer } from './http.js';

// The services' JSON parser must answer every body as fastify's default parser does: the same bodies
// accepted with the same values, the same ones refused with the same status and message.
describe('application/json bodies', () => {
  const pool = { query: async () => ({ rows: [] }) } as unknown as Pool;
  const server = (): FastifyInstance => {
    const app = createHttpServer({
      service: 't',
      log: createLogger({ level: 'silent' }),
      metrics: new Registry(),
      db: pool,
      bodyLimit: 64 * 1024,
    });
    app.post('/echo', async (request) => ({ body: request.body }));
    return app;
  };
  let ours: FastifyInstance;
  let reference: FastifyInstance;
  beforeAll(async () => {
    ours = server();
    reference = server();
    reference.removeContentTypeParser('application/json');
    reference.addContentTypeParser(
      'application/json',
      { parseAs: 'string' },
      reference.getDefaultJsonParser('error', 'error'),
    );
  });
  afterAll(async () => {
    await ours?.close();
    await reference?.close();
  });

  const post = (app: FastifyInstance, payload: string) =>
    app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' }, payload });

  const bodies: Record<string, string> = {
    'a chunk-like body': JSON.stringify({
      type: 'update_height',
      height: 15,
      data: [{ event: { data: '0x' + 'ab'.repeat(900) }, event_raw: '{"a":"b"}' }],
    }),
    'a top-level __proto__ key': '{"a":1,"__proto__":{"polluted":true}}',
    'a nested __proto__ key': '{"a":{"b":{"__proto__":{"polluted":true}}}}',
    'a __proto__ key written with \\u escapes':
      '{"a":{"\\u005f\\u005fproto\\u005f\\u005f":{"polluted":true}}}',
    'a constructor.prototype key': '{"a":{"constructor":{"prototype":{"polluted":true}}}}',
    'a constructor key without prototype': '{"constructor":"fine"}',
    '__proto__ inside a string value': '{"note":"__proto__ is only text here"}',
    'a \\u escape in a value': '{"name":"caf\\u00e9"}',
    'a byte-order mark before the JSON': '\ufeff{"a":1}',
    'malformed JSON': '{"a":',
    'an empty body': '',
    'a scalar': '42',
    'a body over the limit': JSON.stringify({ data: 'x'.repeat(70 * 1024) }),
  };

  for (const [name, payload] of Object.entries(bodies)) {
    it(`answers ${name} as fastify's default parser does`, async () => {
      const [a, b] = await Promise.all([post(ours, payload), post(reference, payload)]);
      expect({ status: a.statusCode, body: a.body }).toEqual({ status: b.statusCode, body: b.body });
    });
  }

  it('refuses prototype poisoning and accepts the rest', async () => {
    for (const name of [
      'a top-level __proto__ key',
      'a nested __proto__ key',
      'a __proto__ key written with \\u escapes',
      'a constructor.prototype key',
    ]) {
      const reply = await post(ours, bodies[name]!);
      expect(reply.statusCode, name).toBe(400);
    }
    const chunk = await post(ours, bodies['a chunk-like body']!);
    expect(chunk.statusCode).toBe(200);
    expect(chunk.json().body).toEqual(JSON.parse(bodies['a chunk-like body']!));
    expect((await post(ours, bodies['a body over the limit']!)).statusCode).toBe(413);
  });
});
