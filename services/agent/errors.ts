/**
 * Every refusal of the Agent: a JSON body `{code, message}` with a matching HTTP status (DESIGN §5.6). The
 * SDK only checks `code == 0` for success, so every refusal has a non-zero code of the 41xxx family. This
 * table is the single source of the README and OpenAPI error lists.
 */
export const AGENT_ERRORS = {
  INTERNAL: {
    code: 41000,
    status: 500,
    meaning: 'unexpected server error (a bug; the body never holds internals)',
  },
  INVALID_BODY: {
    code: 41001,
    status: 400,
    meaning: 'the body is not JSON, or not {"params":[complaint, signature, domain]} (exactly three members)',
  },
  INVALID_COMPLAINT: {
    code: 41002,
    status: 400,
    meaning: 'params[0] is not a valid Complaint (the message names each bad member)',
  },
  INVALID_SIGNATURE: {
    code: 41003,
    status: 400,
    meaning: 'params[1] is not a 65-byte 0x-hex signature (v 27/28/0/1, low s) that recovers to a key',
  },
  INVALID_DOMAIN: {
    code: 41004,
    status: 400,
    meaning:
      'params[2] is not a DID domain (a string of 1 to 255 printable characters, at most 255 UTF-8 bytes)',
  },
  NOT_DOMAIN_OWNER: {
    code: 41005,
    status: 403,
    meaning:
      'the EIP-712 signature does not recover to the owner of the DID domain (wrong signer, wrong domain, or a complaint altered after signing)',
  },
  COMPLAINT_EXISTS: {
    code: 41006,
    status: 409,
    meaning:
      'this bid already has a complaint (on chain, or accepted here from another complainant and not failed): the contract takes one per bid',
  },
  DID_UNAVAILABLE: {
    code: 41007,
    status: 503,
    meaning:
      'the DID owner could not be read (DID support service or registry down); nothing was accepted, retry',
  },
  CHAIN_UNAVAILABLE: {
    code: 41008,
    status: 503,
    meaning:
      'the reputation contract could not be read (hasComplaint), or the chain id of agent.rpc is not known yet; nothing was accepted, retry',
  },
  STORE_UNAVAILABLE: {
    code: 41009,
    status: 503,
    meaning: 'the complaint store (PostgreSQL) or the bus is unavailable; nothing was accepted, retry',
  },
  COMPLAINT_NOT_FOUND: {
    code: 41010,
    status: 404,
    meaning: 'no complaint with this bid id was accepted here',
  },
  ROUTE_NOT_FOUND: { code: 41011, status: 404, meaning: 'no such route' },
  BODY_TOO_LARGE: { code: 41012, status: 413, meaning: 'the body is larger than agent.bodyLimit bytes' },
  UNSUPPORTED_MEDIA_TYPE: { code: 41013, status: 415, meaning: 'the body is not application/json' },
  RATE_LIMITED: {
    code: 41014,
    status: 429,
    meaning: 'too many requests from this client IP (agent.rateLimit); retry after the Retry-After seconds',
  },
  DOMAIN_RATE_LIMITED: {
    code: 41015,
    status: 429,
    meaning:
      'too many complaints for this DID domain (agent.domainRateLimit); retry after the Retry-After seconds',
  },
  INVALID_QUERY: {
    code: 41016,
    status: 400,
    meaning: 'the query is malformed (bid must be 32 bytes of 0x-prefixed hex)',
  },
  UNAUTHORIZED: {
    code: 41017,
    status: 401,
    meaning: 'POST /submit-complaint needs a valid API key in the x-api-key header (agent.apiKeys)',
  },
  FORBIDDEN: { code: 41018, status: 403, meaning: "the client's IP is not in agent.allowIps" },
  COMPLAINT_FAILED_ON_CHAIN: {
    code: 41019,
    status: 409,
    meaning:
      "the bid's complaint failed, and this DID domain's complaints for it were mined and failed agent.maxPaidFailures times (gas paid each time): the Agent does not send it again",
  },
  REQUEST_MALFORMED: { code: 41020, status: 400, meaning: 'the request is not valid HTTP' },
  REQUEST_TIMEOUT: { code: 41021, status: 408, meaning: 'the request was not sent whole within 15 s' },
  HEADERS_TOO_LARGE: { code: 41022, status: 431, meaning: 'the request line or its headers are too large' },
  NOT_A_PARTY: {
    code: 41023,
    status: 403,
    meaning:
      "the complainant is neither the swap's user (the signer is not the complaint's requestor) nor its LP (the domain is not the LP id, and the signer does not own the LP id's DID): such a complaint is judged invalid (case 0) and would take the bid's one place on chain, so the Agent does not pay for it",
  },
  EXPECTATION_FAILED: {
    code: 41024,
    status: 417,
    meaning: 'the request has an Expect header other than 100-continue (answered before any route)',
  },
  STOPPING: {
    code: 41025,
    status: 503,
    meaning: 'the service is stopping (a request on a connection still open during a graceful stop); retry',
  },
  UNPROVEN_AGREEMENT: {
    code: 41026,
    status: 400,
    meaning:
      "the complaint's own signatures do not prove its agreement (userSign does not recover the requestor, or lpSign recovers no owner of the LP id's DID, under the OtmoicSwap domains of the swap's chains), or a member cannot be read: the Classifier judges such a complaint invalid (case 0), so the Agent does not pay for it. Checked only when both chains are in [[chainClients]]",
  },
} as const;

export type AgentErrorName = keyof typeof AGENT_ERRORS;

/** Thrown by handlers; the error handler turns it into `{code, message}` with the table's HTTP status. */
export class AgentError extends Error {
  override readonly name = 'AgentError';
  readonly code: number;
  readonly status: number;

  constructor(
    readonly kind: AgentErrorName,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = AGENT_ERRORS[kind].code;
    this.status = AGENT_ERRORS[kind].status;
  }
}

export function isAgentError(error: unknown): error is AgentError {
  return error instanceof AgentError;
}
