import type { FastifyInstance } from 'fastify';
import { registerCors, type CorsPolicy } from './cors.js';
import { createHttpServer, type HttpServerOptions } from './http.js';
import type { RunningService, ServiceContext } from './service.js';

/**
 * Starts a service's HTTP server on `port` (127.0.0.1 unless HOST says otherwise) after `register` added
 * its routes (and `options.healthChecks` joined GET /health); stopping closes it after in-flight requests finished.
 */
export async function startHttpService(
  context: ServiceContext,
  name: string,
  port: number,
  register: (app: FastifyInstance) => void | Promise<void> = () => undefined,
  options: Pick<
    HttpServerOptions,
    'healthChecks' | 'ownErrorVocabulary' | 'redact' | 'maxParamLength' | 'clientErrorCodes'
  > & { cors?: CorsPolicy } = {},
): Promise<RunningService & { app: FastifyInstance }> {
  const app = createHttpServer({
    service: name,
    log: context.log,
    metrics: context.metrics,
    db: context.db,
    healthChecks: {
      ...(context.busHealth ? { bus: context.busHealth } : {}),
      ...options.healthChecks,
    },
    ownErrorVocabulary: options.ownErrorVocabulary,
    redact: options.redact,
    maxParamLength: options.maxParamLength,
    clientErrorCodes: options.clientErrorCodes,
    // Test harnesses start services with a partial context.
    trustProxy: context.config?.http?.trustProxy,
  });
  // Before the routes: its preflight route and headers then cover them all.
  if (options.cors) await registerCors(app, options.cors);
  await register(app);
  // An empty HOST counts as unset, as every variable does (README): '' would make Node listen on every interface.
  await app.listen({ port, host: process.env.HOST || '127.0.0.1' });
  context.log.info({ port }, `${name} listening`);
  return { app, stop: () => app.close() };
}
