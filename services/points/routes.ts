/**
 * The Points HTTP routes (DESIGN §6): thin handlers that parse the query with zod, ask PointsQueries and
 * answer JSON. Every refusal is `{code, message}` with the HTTP status of errors.ts, 404 included.
 */
import rateLimit from '@fastify/rate-limit';
import { rateLimitSubject } from '../../shared/runtime/access.js';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from '../../shared/logging/logger.js';
import { POINTS_ERRORS, PointsError, type PointsErrorName } from './errors.js';
import type { PointsMetrics } from './metrics.js';
import { pointsOpenApi } from './openapi.js';
import type { PointsQueries } from './queries.js';
import {
  complaintQuery,
  lpPointQuery,
  lpRankingQuery,
  lpRecordsQuery,
  parseQuery,
  userPointQuery,
  userRecordsQuery,
} from './query-params.js';
import { requestLine, setNotFoundAnswer } from '../../shared/runtime/http.js';

/**
 * A client error raised outside the handlers (fastify's body parsing, the dashboard's static files), in
 * Points' vocabulary: a conditional or ranged file request keeps its status; a path the file server refuses
 * (403, e.g. `/dashboard//`) names no resource, like any unknown path; anything else is a malformed request.
 */
/** Points' answer for a path that names no resource, from the router or the file server alike. */
const noRouteMessage = (request: FastifyRequest) => `no route ${requestLine(request)}; see /openapi.json`;

function clientRefusal(status: number): PointsErrorName {
  if (status === 412) return 'PRECONDITION_FAILED';
  if (status === 416) return 'RANGE_NOT_SATISFIABLE';
  if (status === 403 || status === 404) return 'ROUTE_NOT_FOUND';
  return 'INVALID_REQUEST';
}

export function registerPointsRoutes(
  app: FastifyInstance,
  options: { queries: PointsQueries; log: Logger; metrics?: PointsMetrics },
): void {
  const { queries, log } = options;

  app.setErrorHandler((error: FastifyError | PointsError, request, reply) => {
    if (error instanceof PointsError)
      return reply.code(error.status).send({ code: error.code, message: error.message });
    const status = (error as FastifyError).statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const refusal = clientRefusal(status);
      const message = refusal === 'ROUTE_NOT_FOUND' ? noRouteMessage(request) : error.message;
      return reply
        .code(POINTS_ERRORS[refusal].status)
        .send({ code: POINTS_ERRORS[refusal].code, message: message.slice(0, 300) });
    }
    // statement_timeout (point.queryTimeoutMs) cancelled it: the connection is free again, the client may retry.
    if ((error as { code?: unknown }).code === '57014') {
      log.warn({ url: request.url }, 'points query cancelled by point.queryTimeoutMs');
      return reply.code(POINTS_ERRORS.QUERY_TIMEOUT.status).send({
        code: POINTS_ERRORS.QUERY_TIMEOUT.code,
        message: 'the query took too long and was cancelled; retry later',
      });
    }
    if (isDatabaseDown(error)) {
      log.warn({ err: error.message, url: request.url }, 'points query: database unavailable');
      return reply
        .code(POINTS_ERRORS.STORE_UNAVAILABLE.status)
        .send({ code: POINTS_ERRORS.STORE_UNAVAILABLE.code, message: 'the database is unavailable; retry' });
    }
    log.error({ err: error.message, url: request.url }, 'points query failed');
    return reply.code(500).send({ code: POINTS_ERRORS.INTERNAL.code, message: 'internal error' });
  });
  setNotFoundAnswer(app, (request) => ({
    status: 404,
    body: {
      code: POINTS_ERRORS.ROUTE_NOT_FOUND.code,
      message: noRouteMessage(request),
    },
  }));
  if (options.metrics) {
    const histogram = options.metrics.queries;
    app.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url ?? 'unmatched';
      if (route === '/metrics' || route === '/health') return;
      histogram.observe({ route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    });
  }

  app.get('/user-point', async (request) => queries.userPoint(parseQuery(userPointQuery, request.query)));
  app.get('/lp-point', async (request) => queries.lpPoint(parseQuery(lpPointQuery, request.query)));
  app.get('/user-deduction-records', async (request) => {
    const q = parseQuery(userRecordsQuery, request.query);
    return queries.deductionRecords('user', q.address, q);
  });
  app.get('/lp-deduction-records', async (request) => {
    const q = parseQuery(lpRecordsQuery, request.query);
    return queries.deductionRecords('lp', q.lp_id, q);
  });
  app.get('/complaint', async (request) => {
    const { bid, at } = parseQuery(complaintQuery, request.query);
    return queries.complaint(bid, at);
  });
  app.get('/lp-ranking', async (request) => queries.lpRanking(parseQuery(lpRankingQuery, request.query)));

  const document = pointsOpenApi();
  app.get('/openapi.json', async () => document);
}

/**
 * Per client IP on every route registered after it (the Points routes, the dashboard; not /health, /metrics):
 * the queries are public and some aggregate every LP or verdict. Register before the routes.
 */
export async function registerPointsRateLimit(
  app: FastifyInstance,
  limit: { max: number; windowMs: number },
): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: limit.max,
    timeWindow: limit.windowMs,
    keyGenerator: (request) => rateLimitSubject(request.ip),
    errorResponseBuilder: (_request, context) =>
      new PointsError('RATE_LIMITED', `too many requests; retry in ${Math.ceil(context.ttl / 1000)} s`),
  });
}

/** Connection failures and PostgreSQL's "cannot connect now" / admin shutdown classes. */
function isDatabaseDown(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return (
    (typeof code === 'string' &&
      (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03'].includes(code) ||
        code.startsWith('08'))) ||
    /Connection terminated|timeout exceeded when trying to connect/.test((error as Error).message ?? '')
  );
}
