/**
 * The relay routes of one EVM chain deployment under `/evm-client-{systemChainId}/relay` (spec §4,
 * otmoic.md §2). Success bodies are the original's (`code: 200`); every refusal is `{code, message}` with
 * the HTTP status of errors.ts, never a 5xx for bad input.
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import {
  hashlock,
  isChainInputError,
  parseSwapAgreement,
  recoverSwapSigner,
  type SwapVariant,
} from '../../shared/chain/index.js';
import type { Logger } from '../../shared/logging/logger.js';
import { parseCommandBody, type CommandContext, type RelayAction } from './command-body.js';
import { RELAY_ERRORS, RelayError, isRelayError, type RelayErrorName } from './errors.js';
import { openApiDocument } from './openapi.js';
import type { CommandRow, CommandStore } from './store.js';
import { callWindow } from './windows.js';

/** Relay bodies are small; a larger one is refused before parsing. */
export const RELAY_BODY_LIMIT = 64 * 1024;

export interface RelayRoutesOptions {
  systemChainId: string;
  chainId: number;
  commandContext: CommandContext;
  store: CommandStore;
  readFee: () => Promise<bigint>;
  status: () => Record<string, unknown>;
  onCommand?: (action: RelayAction, outcome: 'accepted' | 'repeated') => void;
  log: Logger;
}

export function relayPrefix(systemChainId: string): string {
  return `/evm-client-${systemChainId}/relay`;
}

export function registerRelayRoutes(app: FastifyInstance, options: RelayRoutesOptions): void {
  const prefix = relayPrefix(options.systemChainId);
  const { store, log } = options;

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (isRelayError(error))
      return reply.code(error.status).send({ code: error.code, message: error.message });
    const kind = frameworkErrorKind(error);
    if (kind !== undefined) {
      return reply
        .code(RELAY_ERRORS[kind].status)
        .send({ code: RELAY_ERRORS[kind].code, message: publicMessage(kind, error) });
    }
    log.error({ err: error.message, url: request.url }, 'relay route failed');
    return reply.code(500).send({ code: RELAY_ERRORS.INTERNAL.code, message: 'internal error' });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({
      code: RELAY_ERRORS.ROUTE_NOT_FOUND.code,
      message: `no route ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}; this relay serves ${prefix}/…`,
    }),
  );

  const post = { bodyLimit: RELAY_BODY_LIMIT };

  app.post(`${prefix}/get_hashlock`, post, async (request) => {
    const preimage = objectBody(request.body)['preimage'];
    if (preimage === undefined) throw new RelayError('INVALID_BODY', 'preimage is required');
    try {
      return { code: 200, hashlock: hashlock(preimage) };
    } catch (error) {
      if (isChainInputError(error)) throw new RelayError('INVALID_BODY', error.message);
      throw error;
    }
  });

  app.post(`${prefix}/get_system_fee`, post, async () => {
    let fee: bigint;
    try {
      fee = await options.readFee();
    } catch (error) {
      log.warn({ err: (error as Error).message.slice(0, 300) }, 'basisPointsRate() read failed');
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
  app.post(`${prefix}/get_signer_from_eip712`, post, signer('swap'));
  app.post(`${prefix}/single_swap/get_signer_from_eip712`, post, signer('single-chain'));

  const behalf = (action: RelayAction) => async (request: { body: unknown }) => {
    const parsed = parseCommandBody(action, request.body, options.commandContext);
    let accepted: { id: string; created: boolean };
    try {
      accepted = await store.accept(parsed);
    } catch (error) {
      log.error({ err: (error as Error).message.slice(0, 300), action }, 'storing a relay command failed');
      throw new RelayError(
        'STORE_UNAVAILABLE',
        'the command could not be stored; nothing was accepted, send it again',
      );
    }
    if (accepted.created) {
      log.info(
        { command: accepted.id, action, transferId: parsed.command.transferId },
        'relay command accepted',
      );
    }
    options.onCommand?.(action, accepted.created ? 'accepted' : 'repeated');
    // The same command again gets the same answer.
    return { code: 200, message: 'Command received', command_id: accepted.id };
  };
  for (const action of ['confirm_out', 'confirm_in', 'refund_out', 'refund_in'] as const) {
    app.post(`${prefix}/behalf/${action}`, post, behalf(action));
  }

  app.get(`${prefix}/behalf/commands/:id`, async (request) => {
    const id = (request.params as { id: string }).id;
    const row = /^[0-9a-f]{64}$/.test(id) ? await readCommand(store, id) : undefined;
    if (row === undefined) throw new RelayError('COMMAND_NOT_FOUND', 'no command with this id');
    return { code: 200, command: publicCommand(row) };
  });

  app.get(`${prefix}/status`, async () => ({ code: 200, ...options.status() }));

  const document = openApiDocument(options.systemChainId);
  app.get(`${prefix}/openapi.json`, async () => document);
}

async function readCommand(store: CommandStore, id: string): Promise<CommandRow | undefined> {
  try {
    return await store.get(id);
  } catch {
    throw new RelayError('STORE_UNAVAILABLE', 'the command store is unavailable; try again');
  }
}

/** What GET …/commands/{id} shows: never the raw transaction's signature material beyond its hash. */
export function publicCommand(row: CommandRow) {
  const window = callWindow(row.action, row.command.call);
  return {
    id: row.id,
    action: row.action,
    status: row.status,
    transfer_id: row.transferId,
    window: { op: window.op, start: window.start, end: window.end },
    tx_hash: row.txHash,
    nonce: row.nonce,
    block_number: row.blockNumber,
    reason: row.reason,
    attempts: row.attempts,
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
