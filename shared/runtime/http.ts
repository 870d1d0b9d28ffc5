import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../logging/logger.js';

export interface HttpServerOptions {
  service: string;
  log: Logger;
  metrics: Registry;
  db: Pool;
  /** Bodies larger than this are refused with 413 (chain-client history bodies can be large). */
  bodyLimit?: number;
}

/**
 * A fastify instance with the endpoints every HTTP service has: GET /health (200 when the database answers,
 * 503 otherwise) and GET /metrics (Prometheus text). Services add their routes, then `listen`.
 */
export function createHttpServer(options: HttpServerOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: options.log as FastifyBaseLogger,
    bodyLimit: options.bodyLimit ?? 10 * 1024 * 1024,
  });

  // Every error answers {code, message} with a matching HTTP status. Client errors (bad JSON, too large) keep
  // fastify's status and message; anything unexpected is a 500 that says nothing internal and is logged.
  app.setErrorHandler((error: { statusCode?: number; message: string }, request, reply) => {
    const status =
      error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) request.log.error({ err: error.message, url: request.url }, 'request failed');
    return reply
      .code(status)
      .send({ code: status, message: status === 500 ? 'internal error' : error.message });
  });

  app.get('/health', async (_request, reply) => {
    const started = Date.now();
    try {
      await Promise.race([
        options.db.query('SELECT 1'),
        new Promise((_, reject) => setTimeout(() => reject(new Error('database check timed out')), 2_000)),
      ]);
      return {
        status: 'ok',
        service: options.service,
        checks: { database: { ok: true, ms: Date.now() - started } },
      };
    } catch (err) {
      return reply.code(503).send({
        status: 'unavailable',
        service: options.service,
        checks: { database: { ok: false, error: (err as Error).message } },
      });
    }
  });

  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', options.metrics.contentType);
    return options.metrics.metrics();
  });

  return app;
}
