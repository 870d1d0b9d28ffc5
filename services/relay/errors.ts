/**
 * Every answer of the relay that is not a success: a JSON body `{code, message}` with a matching HTTP
 * status (DESIGN §5.7). 30206 and 30207 are the original chain client's codes; the others are ours, in the
 * same 30xxx family. 30209 and 30231 are our chain client's (services/chain-client/errors.ts): not used here.
 * The table is the single source of the README and OpenAPI error lists.
 */
export const RELAY_ERRORS = {
  INTERNAL: {
    code: 30200,
    status: 500,
    meaning: 'unexpected server error (a bug; the body never holds internals)',
  },
  INVALID_BODY: {
    code: 30201,
    status: 400,
    meaning: 'the body is not JSON, or a field is missing or malformed (the message names each one)',
  },
  INVALID_SIGNATURE: {
    code: 30202,
    status: 400,
    meaning: 'signature is not 65 bytes (v 27/28/0/1) or 64 bytes (EIP-2098) of 0x-hex',
  },
  INVALID_AGREEMENT: {
    code: 30203,
    status: 400,
    meaning: 'value is not a valid OtmoicSwap Message (the message names each bad field)',
  },
  UNSUPPORTED_TRANSACTION_TYPE: {
    code: 30204,
    status: 400,
    meaning: 'transaction_type is not LOCAL_PADDING, CHAIN_PADDING or FASTEST',
  },
  UNSUPPORTED_GAS_PRICE: {
    code: 30205,
    status: 400,
    meaning:
      'gas.gas_price is not FAST, STANDARD, SAFELOW or a decimal wei amount within relay.maxGasPriceWei',
  },
  FEE_READ_FAILED: {
    code: 30206,
    status: 502,
    meaning: "fetch base_points_rate error: the contract's basisPointsRate() could not be read",
  },
  RELAY_SERVER_URL_NOT_FOUND: {
    code: 30207,
    status: 400,
    meaning:
      'register_relay: relay_server_url not found (missing, or not an object of http(s) callback URLs)',
  },
  UNKNOWN_SENDER_WALLET: {
    code: 30208,
    status: 400,
    meaning: 'sender_wallet_name is not in relay.senderWallets',
  },
  COMMAND_NOT_FOUND: { code: 30210, status: 404, meaning: 'no command with this id' },
  STORE_UNAVAILABLE: {
    code: 30211,
    status: 503,
    meaning: 'the command store (PostgreSQL) or the bus is unavailable; nothing was stored, retry',
  },
  ROUTE_NOT_FOUND: {
    code: 30212,
    status: 404,
    meaning: 'no such route (or the system chain id in the path is not this deployment)',
  },
  BODY_TOO_LARGE: { code: 30213, status: 413, meaning: 'the body is larger than the relay accepts' },
  UNSUPPORTED_MEDIA_TYPE: { code: 30214, status: 415, meaning: 'the body is not application/json' },
  RATE_LIMITED: {
    code: 30215,
    status: 429,
    meaning: 'too many requests from this client (API key, else IP); retry after the Retry-After seconds',
  },
  UNAUTHORIZED: {
    code: 30216,
    status: 401,
    meaning: 'this route needs a valid API key in the x-api-key header (relay.apiKeys)',
  },
  FORBIDDEN: { code: 30217, status: 403, meaning: "the client's IP is not in relay.allowIps" },
  WINDOW_CLOSED: {
    code: 30218,
    status: 409,
    meaning:
      "the command's window has closed on the chain's block time (or closes within relay.windowMarginSeconds), or is narrower than relay.windowMarginSeconds and can never be used",
  },
  WINDOW_TOO_FAR: {
    code: 30219,
    status: 400,
    meaning: "the command's window opens more than relay.maxWindowAheadSeconds after the chain's block time",
  },
  TRANSFER_NOT_PENDING: {
    code: 30220,
    status: 409,
    meaning: 'swapStatus of the transfer on chain is not pending (never locked with these terms, or settled)',
  },
  TRANSFER_ID_MISMATCH: {
    code: 30221,
    status: 400,
    meaning: "the body's transfer_id is not the transferId computed from the command's terms",
  },
  CHAIN_UNAVAILABLE: {
    code: 30222,
    status: 503,
    meaning: 'the chain could not be read to check the command; nothing was accepted, retry',
  },
  SENDER_NOT_FOUND: {
    code: 30223,
    status: 400,
    meaning:
      'sender_wallet_name is not in relay.senderWallets and no LogNewTransferIn of the body transfer_id was found on chain',
  },
  COMMAND_FAILED_ON_CHAIN: {
    code: 30224,
    status: 409,
    meaning:
      "the command's transactions were mined and failed relay.maxPaidFailures times (gas paid each time): it is not sent again",
  },
  CHAIN_CLIENT_UNAVAILABLE: {
    code: 30225,
    status: 502,
    meaning:
      'register_relay: the chain client (relay.chainClientRegisterUrl) did not take the callback URLs; they are stored and handed to it again every relay.reregisterSeconds, retry',
  },
  REQUEST_MALFORMED: { code: 30226, status: 400, meaning: 'the request is not valid HTTP' },
  REQUEST_TIMEOUT: { code: 30227, status: 408, meaning: 'the request was not sent whole within 15 s' },
  HEADERS_TOO_LARGE: { code: 30228, status: 431, meaning: 'the request line or its headers are too large' },
  EXPECTATION_FAILED: {
    code: 30229,
    status: 417,
    meaning: 'the request has an Expect header other than 100-continue (answered before any route)',
  },
  STOPPING: {
    code: 30230,
    status: 503,
    meaning: 'the service is stopping (a request on a connection still open during a graceful stop); retry',
  },
} as const;

export type RelayErrorName = keyof typeof RELAY_ERRORS;

/** Thrown by handlers; the error handler turns it into `{code, message}` with the table's HTTP status. */
export class RelayError extends Error {
  override readonly name = 'RelayError';
  readonly code: number;
  readonly status: number;

  constructor(
    readonly kind: RelayErrorName,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = RELAY_ERRORS[kind].code;
    this.status = RELAY_ERRORS[kind].status;
  }
}

export function isRelayError(error: unknown): error is RelayError {
  return error instanceof RelayError;
}
