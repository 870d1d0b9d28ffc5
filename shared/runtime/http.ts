import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { Registry } from 'prom-client';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../logging/logger.js';
import { withDeadline } from './deadline.js';
import { parseJsonBodiesFast } from './json-body.js';

export interface HttpServerOptions {
  service: string;
  log: Logger;
  metrics: Registry;
  db: Pool;
  /** Bodies larger than this are refused with 413 (default DEFAULT_BODY_LIMIT; a route may raise its own). */
  bodyLimit?: number;
  /** Time a client has to send a whole request (default REQUEST_TIMEOUT_MS). */
  requestTimeoutMs?: number;
  /**
   * The service's registered codes for what is answered before any route (a malformed request, one not sent
   * whole in time, a request line or headers too large, an Expect header other than 100-continue, a request
   * during a graceful stop); default: the HTTP status, as 404.
   */
  clientErrorCodes?: ClientErrorCodes;
  /** Checks a service adds to GET /health beside the database check, by name (see HealthCheck). */
  healthChecks?: Readonly<Record<string, HealthCheck>>;
  /**
   * The service answers errors and unknown routes itself, with codes of its own (fastify allows one
   * not-found handler per prefix): the defaults here ({code: <HTTP status>, message}) are not installed.
   */
  ownErrorVocabulary?: boolean;
  /**
   * Removes secrets from request URLs wherever this server writes them: the request log lines, the default
   * not-found answer and the log line of a failed request (e.g. a token that is a path segment).
   */
  redact?: (text: string) => string;
  /** Longest path parameter the router takes (fastify's default: 100); a longer one is an unknown route. */
  maxParamLength?: number;
  /** `http.trustProxy`: proxies whose X-Forwarded-For names the client (request.ip); empty or unset: none. */
  trustProxy?: readonly string[];
}

/** A service's answer to a request for no route: its HTTP status and `{code, message}` body. */
export type NotFoundAnswer = (request: FastifyRequest) => {
  status: number;
  body: { code: number; message: string };
};
const notFoundAnswers = new WeakMap<FastifyInstance, NotFoundAnswer>();

/**
 * Where a not-found message names the request: its method and path, without the query, at most 200
 * characters (secrets removed by `redact` before the cut, so no part of one is left).
 */
export const requestLine = (request: FastifyRequest, redact: (text: string) => string = (text) => text) =>
  `${request.method} ${redact(request.url.split('?')[0]!).slice(0, 200)}`;

/** The answer of a service without codes of its own: 404 `{code: 404, message: "no route GET /x"}`. */
export const defaultNotFound: NotFoundAnswer = (request) => ({
  status: 404,
  body: { code: 404, message: `no route ${requestLine(request)}` },
});

/**
 * Installs the service's answer to unknown routes. The same answer goes to a path parameter the router
 * refuses (over 100 characters, or malformed %-encoding): no resource has such a name, and fastify would
 * otherwise answer its own `{error, code: "FST_ERR_…", statusCode}` body there, outside the vocabulary.
 */
export function setNotFoundAnswer(app: FastifyInstance, answer: NotFoundAnswer): void {
  notFoundAnswers.set(app, answer);
  app.setNotFoundHandler((request, reply) => {
    const { status, body } = answer(request);
    return reply.code(status).send(body);
  });
}

/**
 * fastify's `frameworkErrors` for an app that installs its answer with setNotFoundAnswer: it runs outside the
 * app's handlers (fastify's own would answer), hence the lookup. Async route constraints, the only other
 * framework error, are not used here; they keep fastify's answer.
 */
export function routerRefusals(app: () => FastifyInstance): FastifyServerOptions['frameworkErrors'] {
  return (error, request, reply) => {
    const answer = notFoundAnswers.get(app());
    if (
      answer === undefined ||
      (error.code !== 'FST_ERR_BAD_URL' && error.code !== 'FST_ERR_MAX_PARAM_LENGTH')
    ) {
      return (reply as FastifyReply).send(error);
    }
    const { status, body } = answer(request as FastifyRequest);
    return (reply as FastifyReply).code(status).send(body);
  };
}

/**
 * One check's answer. `degraded`: the service works but something it depends on does not (e.g. a stream
 * waits for blocks); /health stays HTTP 200 with `status: "degraded"`, so an orchestrator does not restart a
 * process that a restart would not help. `unavailable`: /health answers 503. Other keys are details shown
 * under `checks.<name>`.
 */
export interface HealthCheckResult {
  status: 'ok' | 'degraded' | 'unavailable';
  [detail: string]: unknown;
}
/** A check must answer within 2 s; one that throws or times out counts as `unavailable`. */
export type HealthCheck = () => HealthCheckResult | Promise<HealthCheckResult>;

const HEALTH_CHECK_TIMEOUT_MS = 2_000;
const SEVERITY = { ok: 0, degraded: 1, unavailable: 2 } as const;

class HealthCheckTimeout extends Error {}

function withTimeout<T>(work: () => T | Promise<T>, what: string): Promise<T> {
  return withDeadline(
    Promise.resolve().then(work),
    HEALTH_CHECK_TIMEOUT_MS,
    () => new HealthCheckTimeout(`${what} timed out`),
  );
}

/** How often a check that keeps failing with the same error is logged again (/health is probed every few s). */
const HEALTH_FAILURE_LOG_MS = 60_000;

/**
 * What /health shows of a check's thrown error. /health is public (Points), and a driver's message names
 * hosts, ports, users and databases ("getaddrinfo ENOTFOUND db.internal", "password authentication failed
 * for user ..."): it shows only the error's code, and the message goes to the log (redacted, see
 * healthFailureLog).
 */
export function shownHealthError(err: unknown): string {
  if (err instanceof HealthCheckTimeout) return err.message;
  const { code, name } = (err ?? {}) as { code?: unknown; name?: unknown };
  // A driver's code (ECONNREFUSED, a SQLSTATE), else the error's class (KafkaJSConnectionError).
  const kind = [code, name].find(
    (k): k is string => typeof k === 'string' && k !== 'Error' && /^[A-Za-z0-9_]{1,60}$/.test(k),
  );
  return kind
    ? `failed (${kind}); the service's log has the details`
    : "failed; the service's log has the details";
}

/** Logs a failing check's error: at once when it changes, else at most once a HEALTH_FAILURE_LOG_MS. */
function healthFailureLog(log: Logger, redact: (text: string) => string) {
  const last = new Map<string, { message: string; at: number }>();
  return (check: string, err: unknown): void => {
    const message = redact(err instanceof Error ? err.message : String(err));
    const before = last.get(check);
    const now = Date.now();
    if (before && before.message === message && now - before.at < HEALTH_FAILURE_LOG_MS) return;
    last.set(check, { message, at: now });
    log.warn({ check, err: message }, 'health check failed');
  };
}

/**
 * A child of `log` whose `req` serializer (fastify's fields) writes the URL through `redact`: fastify logs
 * every request's URL ("incoming request"), and a child's serializers win over fastify's own.
 */
function redactingRequestLog(log: Logger, redact: (text: string) => string): Logger {
  return log.child(
    {},
    {
      serializers: {
        req: (request: FastifyRequest) => ({
          method: request.method,
          url: redact(request.url),
          host: request.host,
          remoteAddress: request.ip,
          remotePort: request.socket ? request.socket.remotePort : undefined,
        }),
      },
    },
  );
}

export interface ClientErrorCodes {
  malformed: number;
  timeout: number;
  tooLarge: number;
  expectationFailed: number;
  stopping: number;
}

/** A service's ClientErrorCodes from the five entries of its error registry. */
export function clientErrorCodesOf(registry: {
  REQUEST_MALFORMED: { code: number };
  REQUEST_TIMEOUT: { code: number };
  HEADERS_TOO_LARGE: { code: number };
  EXPECTATION_FAILED: { code: number };
  STOPPING: { code: number };
}): ClientErrorCodes {
  return {
    malformed: registry.REQUEST_MALFORMED.code,
    timeout: registry.REQUEST_TIMEOUT.code,
    tooLarge: registry.HEADERS_TOO_LARGE.code,
    expectationFailed: registry.EXPECTATION_FAILED.code,
    stopping: registry.STOPPING.code,
  };
}

/**
 * What Node's HTTP parser refuses before any route or hook runs answers `{code, message}` too (fastify's own
 * answer is `{error, message, statusCode}`), then the socket closes.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex, codes?: ClientErrorCodes): void {
  // An answer already under way on the socket is not interrupted by another (as Node's own handler).
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, codes?.tooLarge ?? 431, 'the request line or its headers are too large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, codes?.timeout ?? 408, 'the request was not sent whole in time']
        : [400, codes?.malformed ?? 400, 'the request is not valid HTTP'];
  const body = JSON.stringify({ code, message });
  socket.write(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  // Destroyed, not ended: a client that keeps its own side open (the slow one timed out here) would keep the
  // socket, and a graceful stop waiting for it, for ever.
  socket.destroy();
}

/** Largest body a route takes unless it says otherwise (its `bodyLimit` route option). */
export const DEFAULT_BODY_LIMIT = 64 * 1024;
/** Time a client has to send a whole request; after it the socket is closed (408). */
export const REQUEST_TIMEOUT_MS = 15_000;

/**
 * A fastify instance with the endpoints every HTTP service has: GET /health (200 `ok` when the database and
 * every contributed check answer ok, 200 `degraded` when a contributed check says so, 503 `unavailable` when
 * the database or a check fails) and GET /metrics (Prometheus text). Services add their routes, then `listen`.
 */
export function createHttpServer(options: HttpServerOptions): FastifyInstance {
  const redact = options.redact ?? ((text: string) => text);
  const requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const app: FastifyInstance = Fastify({
    loggerInstance: (options.redact
      ? redactingRequestLog(options.log, redact)
      : options.log) as FastifyBaseLogger,
    // Small by default: a body is read and parsed before the router knows there is no route for it (a 404 took
    // 10 MB of JSON); a route that takes more says so (the Connector's callbacks).
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    // The whole request (headers and body) within this time: fastify turns Node's own bound off (0), and a
    // client that sent its headers and part of a body held its socket, and a graceful stop, for ever.
    requestTimeout,
    // Given to Node's server at its creation too: set afterwards (as fastify does), Node never enforces it;
    // and it looks for requests over their time at this interval (its default, 30 s, would triple the bound).
    http: { requestTimeout, connectionsCheckingInterval: Math.min(5_000, Math.ceil(requestTimeout / 3)) },
    frameworkErrors: routerRefusals(() => app),
    clientErrorHandler: (err, socket) => answerClientError(err, socket, options.clientErrorCodes),
    ...(options.maxParamLength ? { routerOptions: { maxParamLength: options.maxParamLength } } : {}),
    // Only the listed hops: `true` would let any client name its own address in X-Forwarded-For.
    trustProxy: options.trustProxy?.length ? [...options.trustProxy] : false,
    // Answered below in the {code, message} vocabulary: fastify's own 503 body has no `code`.
    return503OnClosing: false,
  });
  parseJsonBodiesFast(app);

  // During a graceful stop, a request on a connection still open (keep-alive, a request in flight) is answered
  // 503 {code, message} and its connection closed; fastify's own answer was {error, message, statusCode}.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    return reply
      .code(503)
      .header('connection', 'close')
      .send({ code: options.clientErrorCodes?.stopping ?? 503, message: 'the service is stopping; retry' });
  });
  // An Expect header other than 100-continue: Node answered 417 with an empty body.
  app.server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => {
    const body = JSON.stringify({
      code: options.clientErrorCodes?.expectationFailed ?? 417,
      message: 'only Expect: 100-continue is supported',
    });
    response.writeHead(417, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    response.end(body);
  });

  // Every error answers {code, message} with a matching HTTP status. Client errors (bad JSON, too large) keep
  // fastify's status and message; anything unexpected is a 500 that says nothing internal and is logged.
  if (!options.ownErrorVocabulary) {
    app.setErrorHandler((error: { statusCode?: number; message: string }, request, reply) => {
      const status =
        error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
      if (status === 500)
        request.log.error({ err: redact(error.message), url: redact(request.url) }, 'request failed');
      return reply
        .code(status)
        .send({ code: status, message: status === 500 ? 'internal error' : error.message });
    });
    setNotFoundAnswer(
      app,
      options.redact
        ? (request) => ({
            status: 404,
            body: { code: 404, message: `no route ${requestLine(request, redact)}` },
          })
        : defaultNotFound,
    );
  }

  const logHealthFailure = healthFailureLog(options.log, redact);
  app.get('/health', async (_request, reply) => {
    const started = Date.now();
    const checks: Record<string, Record<string, unknown>> = {};
    let status: HealthCheckResult['status'] = 'ok';
    try {
      await withTimeout(() => options.db.query('SELECT 1'), 'database check');
      checks.database = { ok: true, ms: Date.now() - started };
    } catch (err) {
      logHealthFailure('database', err);
      checks.database = { ok: false, error: shownHealthError(err) };
      status = 'unavailable';
    }
    // Contributed checks run side by side; one failing never hides the others.
    const extra = Object.entries(options.healthChecks ?? {});
    const results = await Promise.all(
      extra.map(([name, check]) =>
        withTimeout(check, `${name} check`).catch((err): HealthCheckResult => {
          logHealthFailure(name, err);
          return { status: 'unavailable', error: shownHealthError(err) };
        }),
      ),
    );
    extra.forEach(([name], i) => {
      const result = results[i]!;
      checks[name] = { ok: result.status === 'ok', ...result };
      if (SEVERITY[result.status] > SEVERITY[status]) status = result.status;
    });
    // {code, message} as every answer of every service (503 included), beside the checks' details.
    const code = status === 'unavailable' ? 503 : 200;
    const failing = Object.keys(checks).filter((name) => checks[name]!.ok === false);
    return reply.code(code).send({
      code,
      message: status === 'ok' ? 'ok' : `${status}: ${failing.join(', ')}`,
      status,
      service: options.service,
      checks,
    });
  });

  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', options.metrics.contentType);
    return options.metrics.metrics();
  });

  return app;
}
