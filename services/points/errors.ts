/**
 * Every answer of Points that is not a success: a JSON body `{code, message}` with a matching HTTP status
 * (DESIGN §5.6). Points' codes are the 32xxx family. This table is the single source of the README, the
 * service README and the OpenAPI error lists.
 */
export const POINTS_ERRORS = {
  INTERNAL: {
    code: 32000,
    status: 500,
    meaning: 'unexpected server error (a bug; the body never holds internals)',
  },
  INVALID_QUERY: {
    code: 32001,
    status: 400,
    meaning: 'a query parameter is missing, unknown or malformed (the message names each one)',
  },
  INVALID_REQUEST: {
    code: 32002,
    status: 400,
    meaning:
      'the request is malformed outside its query (e.g. a body that is not what its content-type says)',
  },
  ROUTE_NOT_FOUND: { code: 32004, status: 404, meaning: 'no such route' },
  DID_NOT_FOUND: {
    code: 32005,
    status: 404,
    meaning:
      'the DID support service knows no owner of this DID name (or refuses the name, e.g. one over 100 characters)',
  },
  DID_UNAVAILABLE: {
    code: 32006,
    status: 503,
    meaning: 'did= was given, the DID support service is down and the name was never resolved before',
  },
  COMPLAINT_NOT_FOUND: {
    code: 32007,
    status: 404,
    meaning: 'neither a complaint nor a verdict is known for this bid',
  },
  STORE_UNAVAILABLE: { code: 32010, status: 503, meaning: 'the database is unavailable; retry' },
  QUERY_TIMEOUT: {
    code: 32011,
    status: 503,
    meaning: 'the query ran longer than point.queryTimeoutMs and was cancelled; retry later',
  },
  RATE_LIMITED: {
    code: 32012,
    status: 429,
    meaning: 'too many requests from this client IP (point.rateLimit); retry after the Retry-After seconds',
  },
  PRECONDITION_FAILED: {
    code: 32013,
    status: 412,
    meaning: "a dashboard file's If-Match / If-Unmodified-Since condition does not hold",
  },
  RANGE_NOT_SATISFIABLE: {
    code: 32014,
    status: 416,
    meaning: "a dashboard file's Range lies outside the file",
  },
  REQUEST_MALFORMED: { code: 32015, status: 400, meaning: 'the request is not valid HTTP' },
  REQUEST_TIMEOUT: { code: 32016, status: 408, meaning: 'the request was not sent whole within 15 s' },
  HEADERS_TOO_LARGE: { code: 32017, status: 431, meaning: 'the request line or its headers are too large' },
  EXPECTATION_FAILED: {
    code: 32018,
    status: 417,
    meaning: 'the request has an Expect header other than 100-continue (answered before any route)',
  },
  STOPPING: {
    code: 32019,
    status: 503,
    meaning: 'the service is stopping (a request on a connection still open during a graceful stop); retry',
  },
} as const;

export type PointsErrorName = keyof typeof POINTS_ERRORS;

/** Thrown by handlers; the error handler turns it into `{code, message}` with the table's HTTP status. */
export class PointsError extends Error {
  override readonly name = 'PointsError';
  readonly code: number;
  readonly status: number;

  constructor(
    readonly kind: PointsErrorName,
    message: string,
  ) {
    super(message);
    this.code = POINTS_ERRORS[kind].code;
    this.status = POINTS_ERRORS[kind].status;
  }
}
