/**
 * The relay routes of one EVM chain deployment under `/evm-client-{systemChainId}/relay` (spec §4,
 * otmoic.md §2). Success bodies are the original's (`code: 200`); every refusal is `{code, message}` with
 * the HTTP status of errors.ts, never a 5xx for bad input.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  hashlock,
  isChainInputError,
  parseSwapAgreement,
  recoverSwapSigner,
  type SwapVariant,
} from '../../shared/chain/index.js';
import type { Logger } from '../../shared/logging/logger.js';
import type { ChainView } from './chain-view.js';
import {
  COMMAND_KEYS,
  parseCommandBody,
  type CommandContext,
  type ParsedCommand,
  type RelayAction,
} from './command-body.js';
import { RELAY_ERRORS, RelayError, isRelayError, type RelayErrorName } from './errors.js';
import { openApiDocument } from './openapi.js';
import type { CommandRow, CommandStore } from './store.js';
import { paidFailures } from '../../shared/sender/index.js';
import { describeWindow, type CallWindow } from './windows.js';
import { accessGuard } from '../../shared/runtime/access.js';
import { requestLine, setNotFoundAnswer } from '../../shared/runtime/http.js';
import { parseJsonBodiesFast } from '../../shared/runtime/json-body.js';
import { MAX_CALLBACK_URL_LENGTH, holdsCredentials } from '../../shared/otmoic/support-register.js';

/** Relay bodies are small; a larger one is refused before parsing. */
export const RELAY_BODY_LIMIT = 64 * 1024;

export interface RelayRoutesOptions {
  systemChainId: string;
  chainId: number;
  commandContext: CommandContext;
  store: CommandStore;
  readFee: () => Promise<bigint>;
  status: () => Record<string, unknown>;
  onCommand?: (action: RelayAction, outcome: 'accepted' | 'repeated' | 'reopened' | 'exhausted') => void;
  /** A failed command was re-opened: the sender should look now. */
  onReopened?: () => void;
  /**
   * Hands register_relay's URLs to the chain client (throws when it did not take them); undefined: the URLs
   * are only stored (no relay.chainClientRegisterUrl).
   */
  forwardRegistration?: (callbacks: Record<string, string>) => Promise<void>;
  /** The origin (scheme, host, port) of relay.chainClientRegisterUrl, for log lines: never its path or query. */
  chainClientOrigin?: string;
  /** register_relay stored URLs that nothing will deliver to (no forwardRegistration). */
  onStoredOnly?: () => void;
  /** relay.reregisterSeconds, for the refusal's message. */
  reregisterSeconds?: number;
  /** Chain reads at accept time; undefined = no chain checks (conformance tests without a chain). */
  chain?: ChainView;
  windowMarginSeconds: number;
  maxWindowAheadSeconds: number;
  /** A failed command whose transactions were mined and failed this many times is not re-opened. */
  maxPaidFailures: number;
  access: { apiKeys: readonly string[]; allowIps: readonly string[]; restrictReads: boolean };
  rateLimit: { max: number; windowMs: number };
  /** Compatibility: refusals answer HTTP 200 with {code, message}. */
  errorsAsHttp200: boolean;
  /** Removes RPC URLs (API keys) from any text before it is answered or logged. */
  scrub: (text: string) => string;
  log: Logger;
}

export function relayPrefix(systemChainId: string): string {
  return `/evm-client-${systemChainId}/relay`;
}

export async function registerRelayRoutes(app: FastifyInstance, options: RelayRoutesOptions): Promise<void> {
  const prefix = relayPrefix(options.systemChainId);
  const { store, log, scrub } = options;
  const statusOf = (status: number) => (options.errorsAsHttp200 ? 200 : status);
  // An empty JSON body is `{}`, as the original's body parser took it (get_system_fee takes no members).
  parseJsonBodiesFast(app, { emptyAs: () => ({}) });
  const guard = accessGuard({
    ...options.access,
    refuse: (kind, message) => new RelayError(kind, message),
    allowIpsKey: 'relay.allowIps',
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (isRelayError(error))
      return reply.code(statusOf(error.status)).send({ code: error.code, message: scrub(error.message) });
    const kind = frameworkErrorKind(error);
    if (kind !== undefined) {
      return reply
        .code(statusOf(RELAY_ERRORS[kind].status))
        .send({ code: RELAY_ERRORS[kind].code, message: scrub(publicMessage(kind, error)) });
    }
    log.error({ err: scrub(error.message), url: request.url }, 'relay route failed');
    return reply.code(500).send({ code: RELAY_ERRORS.INTERNAL.code, message: 'internal error' });
  });
  setNotFoundAnswer(app, (request) => ({
    status: statusOf(404),
    body: {
      code: RELAY_ERRORS.ROUTE_NOT_FOUND.code,
      message: `no route ${requestLine(request)}; this relay serves ${prefix}/…`,
    },
  }));

  // JSON only: fastify would otherwise hand a text/plain body to the handler as a string (a 400, not the 415 the
  // error table gives for a body that is not application/json).
  app.removeContentTypeParser('text/plain');
  // Per client (valid API key, else IP), on the relay routes that cost something (gas, the database, the RPC):
  // a flood from one client is answered 429 before its body is parsed, and never uses another client's budget.
  // The pure computations (get_hashlock, the two get_signer routes) and get_system_fee (cached for a block)
  // cost about what a 429 does; a relay server asks them for every swap, from one address.
  await app.register(rateLimit, {
    // One budget per client across those routes (a per-route budget would multiply it).
    global: true,
    max: options.rateLimit.max,
    timeWindow: options.rateLimit.windowMs,
    keyGenerator: (request) => guard.clientKey(request.ip, request.headers['x-api-key']),
    errorResponseBuilder: (_request, context) =>
      new RelayError('RATE_LIMITED', `too many requests; retry in ${Math.ceil(context.ttl / 1000)} s`),
  });
  const restricted = async (request: FastifyRequest) => guard.check(request.ip, request.headers['x-api-key']);
  const post = { bodyLimit: RELAY_BODY_LIMIT };
  const pure = { ...post, config: { rateLimit: false } };
  const guarded = { ...post, onRequest: restricted };
  const readGuard = options.access.restrictReads ? { onRequest: restricted } : {};
  // /metrics belongs to the shared HTTP server: restricted here by its matched route when reads are. Never by
  // the raw URL: the router decodes it first, so `/%6Detrics` reaches the same route.
  if (options.access.restrictReads) {
    app.addHook('onRequest', async (request: FastifyRequest, _reply: FastifyReply) => {
      if (request.routeOptions.url === '/metrics') guard.check(request.ip, request.headers['x-api-key']);
    });
  }

  app.post(`${prefix}/get_hashlock`, pure, async (request) => {
    const preimage = objectBody(request.body)['preimage'];
    if (preimage === undefined) throw new RelayError('INVALID_BODY', 'preimage is required');
    try {
      return { code: 200, hashlock: hashlock(preimage) };
    } catch (error) {
      if (isChainInputError(error)) throw new RelayError('INVALID_BODY', error.message);
      throw error;
    }
  });

  app.post(`${prefix}/get_system_fee`, pure, async () => {
    let fee: bigint;
    try {
      fee = await options.readFee();
    } catch (error) {
      log.warn({ err: scrub((error as Error).message).slice(0, 300) }, 'basisPointsRate() read failed');
      throw new RelayError('FEE_READ_FAILED', 'fetch base_points_rate error');
    }
    return { code: 200, fee: Number(fee) };
  });

  const signer = (variant: SwapVariant) => async (request: { body: unknown }) => {
    const body = objectBody(request.body);
    if (body['signature'] === undefined) throw new RelayError('INVALID_BODY', 'signature is required');
    if (typeof body['signature'] !== 'string')
      throw new RelayError('INVALID_SIGNATURE', 'signature must be a 0x-hex string');
    if (body['value'] === undefined) throw new RelayError('INVALID_BODY', 'value is required');
    try {
      const value = parseSwapAgreement(body['value'], variant);
      return { code: 200, address: recoverSwapSigner(value, body['signature'], options.chainId, variant) };
    } catch (error) {
      if (isChainInputError(error, 'INVALID_AGREEMENT'))
        throw new RelayError('INVALID_AGREEMENT', error.message);
      if (isChainInputError(error)) throw new RelayError('INVALID_SIGNATURE', error.message);
      throw error;
    }
  };
  app.post(`${prefix}/get_signer_from_eip712`, pure, signer('swap'));
  app.post(`${prefix}/single_swap/get_signer_from_eip712`, pure, signer('single-chain'));

  const notPending = (transferId: string, status: number) =>
    new RelayError(
      'TRANSFER_NOT_PENDING',
      `swapStatus(${transferId}) is ${['none (never locked with these terms)', 'pending', 'confirmed', 'refunded'][status] ?? status}, not pending`,
    );

  const chainRead = async <T>(what: string, read: () => Promise<T>): Promise<T> => {
    try {
      return await read();
    } catch (error) {
      log.warn({ err: scrub((error as Error).message).slice(0, 300), what }, 'accept-time chain read failed');
      throw new RelayError(
        'CHAIN_UNAVAILABLE',
        `the chain could not be read (${what}); nothing was accepted, retry`,
      );
    }
  };

  /** Parses the body; an unknown wallet name with a transfer_id takes the sender of that transferIn on chain. */
  const parse = async (action: RelayAction, body: unknown): Promise<ParsedCommand> => {
    try {
      return parseCommandBody(action, body, options.commandContext);
    } catch (error) {
      const chain = options.chain;
      if (!(isRelayError(error) && error.kind === 'UNKNOWN_SENDER_WALLET') || chain === undefined)
        throw error;
      const transferIdGiven = commandOf(action, body)?.['transfer_id'];
      if (typeof transferIdGiven !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(transferIdGiven)) throw error;
      // One eth_call first: a transfer_id never locked (any random one) must not cost a scan of the logs.
      const status = await chainRead('swapStatus', () => chain.swapStatus(transferIdGiven));
      if (status === 0)
        throw new RelayError(
          'SENDER_NOT_FOUND',
          `no transfer with transfer_id ${transferIdGiven} was ever locked on chain (swapStatus none)`,
        );
      if (status !== 1) throw notPending(transferIdGiven, status);
      const sender = await chainRead('LogNewTransferIn', () => chain.transferInSender(transferIdGiven));
      if (sender === undefined)
        throw new RelayError(
          'SENDER_NOT_FOUND',
          `no LogNewTransferIn of transfer_id ${transferIdGiven} on chain`,
        );
      return parseCommandBody(action, body, options.commandContext, sender);
    }
  };

  /** Refuses a command the chain says cannot be made: window closed or too far ahead, transfer not pending. */
  const checkOnChain = async (parsed: ParsedCommand): Promise<void> => {
    const chain = options.chain;
    if (chain === undefined) return;
    const { command } = parsed;
    const window = store.windowOf(command.action, command.call);
    // The sender signs nothing from windowMarginSeconds before a window's end: a window narrower than the
    // margin closes for it before it opens, whatever the chain's time. Refused before any chain read.
    if (window.end !== null && window.end - options.windowMarginSeconds < window.start) {
      throw new RelayError(
        'WINDOW_CLOSED',
        `window can never be used: ${describeWindow(window)}, and the relay sends nothing in the last ${options.windowMarginSeconds} s of a window (relay.windowMarginSeconds)`,
      );
    }
    const now = await chainRead('block time', () => chain.chainTime());
    if (window.end !== null && now >= window.end - options.windowMarginSeconds) {
      throw new RelayError(
        'WINDOW_CLOSED',
        `window closed: ${describeWindow(window)}; the chain is at block time ${now} (safety margin ${options.windowMarginSeconds} s)`,
      );
    }
    if (window.start - now > options.maxWindowAheadSeconds) {
      throw new RelayError(
        'WINDOW_TOO_FAR',
        `${describeWindow(window)}: more than ${options.maxWindowAheadSeconds} s after the chain's block time ${now}`,
      );
    }
    const status = await chainRead('swapStatus', () => chain.swapStatus(command.transferId));
    if (status !== 1) throw notPending(command.transferId, status);
  };

  const refuseExhausted = (action: RelayAction, id: string, paid: number) => {
    if (paid < options.maxPaidFailures) return;
    options.onCommand?.(action, 'exhausted');
    log.warn(
      { command: id, action, paidFailures: paid },
      'relay command not re-opened: it failed on chain too often',
    );
    throw new RelayError(
      'COMMAND_FAILED_ON_CHAIN',
      `command ${id}: ${paid} of its transactions were mined and failed (relay.maxPaidFailures is ${options.maxPaidFailures}); it is not sent again`,
    );
  };

  const behalf = (action: RelayAction) => async (request: { body: unknown }) => {
    const parsed = await parse(action, request.body);
    // By (action, transferId): a command stored under an older id scheme is the same command.
    const known = await readStore(() => store.find(parsed.command));
    // A failed command past its paid failures is refused before any chain read, as the store would refuse to
    // re-open it (it decides again under the row's lock); any other known command answers its status.
    if (known?.status === 'failed') refuseExhausted(action, known.id, paidFailures(known));
    // A command already under way (or done) answers its status; only a new or failed one is checked on chain.
    const checked = known === undefined || known.status === 'failed';
    if (checked) await checkOnChain(parsed);
    let accepted: Awaited<ReturnType<CommandStore['accept']>>;
    try {
      accepted = await store.accept(parsed, {
        // Only after the checks: a command under way when read may have failed since (the sender finished it
        // before the store's lock); it then answers `failed`, and its next post is checked and re-opens it.
        reopen: options.chain !== undefined && checked,
        maxPaidFailures: options.maxPaidFailures,
      });
    } catch (error) {
      log.error(
        { err: scrub((error as Error).message).slice(0, 300), action },
        'storing a relay command failed',
      );
      throw new RelayError(
        'STORE_UNAVAILABLE',
        'the command could not be stored; nothing was accepted, send it again',
      );
    }
    if (accepted.created || accepted.reopened) {
      log.info(
        { command: accepted.id, action, transferId: parsed.command.transferId, reopened: accepted.reopened },
        'relay command accepted',
      );
    }
    if (accepted.exhausted !== undefined) refuseExhausted(action, accepted.id, accepted.exhausted);
    if (accepted.reopened) options.onReopened?.();
    options.onCommand?.(action, accepted.created ? 'accepted' : accepted.reopened ? 'reopened' : 'repeated');
    return { code: 200, message: 'Command received', command_id: accepted.id, status: accepted.status };
  };
  for (const action of ['confirm_out', 'confirm_in', 'refund_out', 'refund_in'] as const) {
    app.post(`${prefix}/behalf/${action}`, guarded, behalf(action));
  }

  app.post(`${prefix}/register_relay`, guarded, async (request) => {
    const urls = objectBody(request.body)['relay_server_url'];
    const parsedUrls = registrationUrls(urls);
    if (parsedUrls === undefined)
      throw new RelayError('RELAY_SERVER_URL_NOT_FOUND', 'relay_server_url not found');
    try {
      await store.register(options.systemChainId, parsedUrls);
    } catch (error) {
      log.error(
        { err: scrub((error as Error).message).slice(0, 300) },
        'storing a relay registration failed',
      );
      throw new RelayError('STORE_UNAVAILABLE', 'the registration could not be stored; send it again');
    }
    if (options.forwardRegistration === undefined) {
      options.onStoredOnly?.();
      log.warn(
        { callbacks: Object.keys(parsedUrls) },
        'relay server registered, but relay.chainClientRegisterUrl is not set: nothing delivers events to its URLs',
      );
      return { code: 200, message: 'register succeed' };
    }
    try {
      await options.forwardRegistration(parsedUrls);
    } catch (error) {
      // The answer names the setting, never the URL: it may carry a token (support-register's errors never
      // quote it, and the scrub removes it should a chain client's own message echo it). Logs name its origin.
      const reason = scrub((error as Error).message).slice(0, 300);
      log.warn(
        { err: reason, chainClient: options.chainClientOrigin },
        'register_relay: the chain client did not take the callback URLs',
      );
      throw new RelayError(
        'CHAIN_CLIENT_UNAVAILABLE',
        `the chain client (relay.chainClientRegisterUrl) did not take the callback URLs (${reason}); they are stored and handed to it again every ${options.reregisterSeconds ?? 60} s; retry`,
      );
    }
    log.info({ callbacks: Object.keys(parsedUrls) }, 'relay server registered');
    return { code: 200, message: 'register succeed' };
  });

  const shown = (row: CommandRow) => publicCommand(row, store.windowOf(row.action, row.command.call), scrub);
  app.get(`${prefix}/behalf/commands/:id`, readGuard, async (request) => {
    const id = (request.params as { id: string }).id;
    const row = /^[0-9a-f]{64}$/.test(id) ? await readStore(() => store.get(id)) : undefined;
    if (row === undefined) throw new RelayError('COMMAND_NOT_FOUND', 'no command with this id');
    return { code: 200, command: shown(row) };
  });

  app.get(`${prefix}/behalf/commands`, readGuard, async (request) => {
    const transferId = (request.query as Record<string, unknown>)['transfer_id'];
    if (typeof transferId !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(transferId))
      throw new RelayError('INVALID_BODY', 'transfer_id (query) must be 32 bytes of 0x-prefixed hex');
    let rows: CommandRow[];
    try {
      rows = await store.byTransfer(transferId);
    } catch {
      throw new RelayError('STORE_UNAVAILABLE', 'the command store is unavailable; try again');
    }
    return { code: 200, commands: rows.map(shown) };
  });

  app.get(`${prefix}/status`, readGuard, async () =>
    JSON.parse(scrub(JSON.stringify({ code: 200, ...options.status() }))),
  );

  const document = openApiDocument(options.systemChainId);
  app.get(`${prefix}/openapi.json`, async () => document);
}

const CALLBACKS = [
  'on_transfer_out',
  'on_transfer_in',
  'on_confirm_out',
  'on_confirm_in',
  'on_refunded_out',
  'on_refunded_in',
] as const;

/** The callback URLs of a register_relay body: an object of http(s) URLs (at least one known callback). */
function registrationUrls(value: unknown): Record<string, string> | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const urls: Record<string, string> = {};
  for (const name of CALLBACKS) {
    const url = (value as Record<string, unknown>)[name];
    // null is "not given": a relay server in Java (Jackson) writes its unset members so.
    if (url === undefined || url === null) continue;
    // What the chain client takes (services/chain-client/routes.ts): refused there, a registration would be
    // answered "the chain client did not take it, retry" for ever.
    if (typeof url !== 'string' || url.length > MAX_CALLBACK_URL_LENGTH || !/^https?:\/\/[^\s]+$/.test(url))
      return undefined;
    const parsed = URL.parse(url);
    if (parsed === null || holdsCredentials(parsed)) return undefined;
    urls[name] = url;
  }
  return Object.keys(urls).length > 0 ? urls : undefined;
}

/** The command object of a behalf body (under any of its keys), if there is one. */
function commandOf(action: RelayAction, body: unknown): Record<string, unknown> | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  for (const key of COMMAND_KEYS[action]) {
    const value = (body as Record<string, unknown>)[key];
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      return value as Record<string, unknown>;
  }
  return undefined;
}

async function readStore(read: () => Promise<CommandRow | undefined>): Promise<CommandRow | undefined> {
  try {
    return await read();
  } catch {
    throw new RelayError('STORE_UNAVAILABLE', 'the command store is unavailable; try again');
  }
}

/** What GET …/commands/{id} shows: never the raw transaction's signature material beyond its hash. */
export function publicCommand(
  row: CommandRow,
  window: CallWindow,
  scrub: (text: string) => string = (t) => t,
) {
  return {
    id: row.id,
    action: row.action,
    status: row.status,
    transfer_id: row.transferId,
    window: { op: window.op, start: window.start, end: window.end },
    tx_hash: row.txHash,
    nonce: row.nonce,
    block_number: row.blockNumber,
    reason: row.reason === null ? null : scrub(row.reason),
    attempts: row.attempts,
    paid_failures: paidFailures(row),
    /** Every transaction signed at the nonce (speed-ups, the freeing self-transfer), oldest first. */
    transactions: row.txs.map((t) => ({ kind: t.kind, tx_hash: t.hash, fee: t.fee, gas_limit: t.gasLimit })),
    gas_price: row.command.gasPrice,
    client: row.metadata,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

function objectBody(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new RelayError('INVALID_BODY', 'the body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/** Fastify's own refusals (bad JSON, wrong content type, too large) mapped to relay codes. */
function frameworkErrorKind(error: FastifyError): RelayErrorName | undefined {
  const status = error.statusCode ?? 500;
  if (status === 413) return 'BODY_TOO_LARGE';
  if (status === 429) return 'RATE_LIMITED';
  if (status === 415) return 'UNSUPPORTED_MEDIA_TYPE';
  if (status >= 400 && status < 500) return 'INVALID_BODY';
  return undefined;
}

function publicMessage(kind: RelayErrorName, error: FastifyError): string {
  if (kind === 'BODY_TOO_LARGE') return `the body is larger than ${RELAY_BODY_LIMIT} bytes`;
  if (kind === 'UNSUPPORTED_MEDIA_TYPE') return 'the body must be application/json';
  // Fastify's JSON messages say what is wrong without echoing secrets (there are none in relay bodies).
  return `the body is not valid JSON: ${error.message.slice(0, 200)}`;
}
