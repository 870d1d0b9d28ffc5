/**
 * The Agent's routes: POST /submit-complaint (the SDK's body, success `{code: 0, …}`), GET /complaint-status,
 * GET /status, GET /openapi.json. Every refusal is `{code, message}` with the HTTP status of errors.ts, and
 * nothing is stored or sent before the complaint passed every check that can be made without gas.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../../shared/logging/logger.js';
import { agreementProof } from './agreement-proof.js';
import { complainantParty } from './complainant-party.js';
import { parseComplaintBody, type ParsedComplaint } from './complaint-body.js';
import type { DidOwnership } from './did-ownership.js';
import { AGENT_ERRORS, AgentError, isAgentError, type AgentErrorName } from './errors.js';
import { agentOpenApiDocument } from './openapi.js';
import {
  ACCEPT_MESSAGES,
  paidFailuresOf,
  sameComplaint,
  type AcceptOutcome,
  type ComplaintRow,
  type ComplaintStore,
} from './store.js';
import { paidFailures } from '../../shared/sender/index.js';
import { accessGuard } from '../../shared/runtime/access.js';
import { requestLine, setNotFoundAnswer } from '../../shared/runtime/http.js';

/** What the checks need of the chain; undefined while the chain id of agent.rpc is not known yet. */
export interface AgentChain {
  chainId: number;
  did: DidOwnership;
  hasComplaint: (bidId: string) => Promise<boolean>;
}

export interface AgentRoutesOptions {
  contractAddr: string;
  store: ComplaintStore;
  chain: () => AgentChain | undefined;
  rateLimit: { max: number; windowMs: number };
  domainRateLimit: { max: number; windowMs: number };
  bodyLimit: number;
  /** A failed complaint is not sent again once its domain's complaints for the bid failed on chain this often. */
  maxPaidFailures: number;
  /** Who may call POST /submit-complaint (it spends the Agent wallet's gas); both empty: anyone. */
  access: { apiKeys: readonly string[]; allowIps: readonly string[] };
  /**
   * System chain id → EVM chain id of the chains the deployment watches (`[[chainClients]]`): a complaint
   * about a swap on two of them must prove its agreement (agreement-proof.ts). Empty: nothing is checked.
   */
  swapChains: ReadonlyMap<string, number>;
  /** The agreement of a complaint that passed the other checks was proven, or could not be checked. */
  onAgreementChecked?: (result: 'proven' | 'unchecked') => void;
  /** A failed complaint was re-opened: the sender should look now. */
  onReopened?: () => void;
  onOutcome?: (outcome: 'accepted' | 'repeated' | 'reopened' | 'replaced') => void;
  onRefused?: (reason: AgentErrorName) => void;
  status: () => Record<string, unknown>;
  /** Removes RPC URLs (API keys) from any text before it is answered or logged. */
  scrub: (text: string) => string;
  log: Logger;
}

const BID = /^0x[0-9a-fA-F]{64}$/;

export async function registerAgentRoutes(app: FastifyInstance, options: AgentRoutesOptions): Promise<void> {
  const { store, log, scrub } = options;
  const guard = accessGuard({
    ...options.access,
    refuse: (kind, message) => new AgentError(kind, message),
    allowIpsKey: 'agent.allowIps',
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    let kind: AgentErrorName | undefined;
    let message: string;
    if (isAgentError(error)) {
      kind = error.kind;
      message = error.message;
    } else {
      kind = frameworkErrorKind(error);
      message = kind === undefined ? '' : publicMessage(kind, error, options.bodyLimit);
    }
    if (kind === undefined) {
      log.error({ err: scrub(error.message), url: request.url }, 'agent route failed');
      kind = 'INTERNAL';
      message = 'internal error';
    }
    if (request.routeOptions.url === '/submit-complaint') options.onRefused?.(kind);
    const { code, status } = AGENT_ERRORS[kind];
    return reply.code(status).send({ code, message: scrub(message) });
  });
  setNotFoundAnswer(app, (request) => ({
    status: 404,
    body: { code: AGENT_ERRORS.ROUTE_NOT_FOUND.code, message: `no route ${requestLine(request)}` },
  }));

  // JSON only: fastify would otherwise hand a text/plain body to the handler as a string.
  app.removeContentTypeParser('text/plain');
  // Per client (valid API key, else IP) on every route, before the body is parsed.
  await app.register(rateLimit, {
    global: true,
    max: options.rateLimit.max,
    timeWindow: options.rateLimit.windowMs,
    keyGenerator: (request) => guard.clientKey(request.ip, request.headers['x-api-key']),
    errorResponseBuilder: (_request, context) =>
      new AgentError('RATE_LIMITED', `too many requests; retry in ${Math.ceil(context.ttl / 1000)} s`),
  });
  // Per DID domain, counted only once the signer is known to own it: nobody can use up another's budget.
  const domainLimit = app.createRateLimit({
    max: options.domainRateLimit.max,
    timeWindow: options.domainRateLimit.windowMs,
    keyGenerator: (request: FastifyRequest) =>
      `domain:${((request.body as { params: unknown[] }).params[2] as string).slice(0, 255)}`,
  });

  const stored = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (isAgentError(error)) throw error;
      log.error({ err: scrub((error as Error).message).slice(0, 300) }, 'complaint store failed');
      throw new AgentError(
        'STORE_UNAVAILABLE',
        'the complaint store is unavailable; nothing was accepted, retry',
      );
    }
  };

  /**
   * Everything that can be known without gas: the signer owns the domain, the complainant is a party of the
   * swap, its signatures prove the agreement, the bid has no complaint.
   */
  const checkBeforeGas = async (
    request: FastifyRequest,
    reply: FastifyReply,
    parsed: ParsedComplaint,
    chain: AgentChain,
  ): Promise<void> => {
    /** A read of the DID source; when it fails, 503 with `what` could not be read (logged, scrubbed). */
    const fromDid = async <T>(read: () => Promise<T>, what: string): Promise<T> => {
      try {
        return await read();
      } catch (error) {
        log.warn(
          { err: scrub((error as Error).message).slice(0, 300), source: chain.did.source },
          'DID read failed',
        );
        throw new AgentError('DID_UNAVAILABLE', `${what} could not be read; retry`);
      }
    };
    const ownership = await fromDid(
      () => chain.did.check(parsed.domain, parsed.signer),
      `the owner of DID ${parsed.domain}`,
    );
    if (!ownership.owns) {
      throw new AgentError(
        'NOT_DOMAIN_OWNER',
        `the signature recovers ${parsed.signer}, which does not own the DID domain ${JSON.stringify(parsed.domain)} (${ownership.detail}); the signature, the domain or the complaint is not the one signed`,
      );
    }
    // Before the domain's budget is counted: a stranger's complaint is refused whatever its rate.
    const party = await fromDid(
      () => complainantParty(parsed, chain.did),
      `the owner of the LP id ${JSON.stringify(parsed.complaint.lpId)}`,
    );
    if (party === null)
      throw new AgentError(
        'NOT_A_PARTY',
        `the complainant is neither the swap's user nor its LP: the signer ${parsed.signer} is not the requestor ${parsed.complaint.requestor}, and the domain ${JSON.stringify(parsed.domain)} is not the LP id ${JSON.stringify(parsed.complaint.lpId)}, whose DID the signer does not own; such a complaint is judged invalid (case 0), so the Agent does not pay for it`,
      );
    const limit = await domainLimit(request);
    if (!limit.isAllowed && limit.isExceeded) {
      // As the client IP limit's answer has it (errors.ts promises it): the plugin sets it only for its hook.
      reply.header('retry-after', String(limit.ttlInSeconds));
      throw new AgentError(
        'DOMAIN_RATE_LIMITED',
        `too many complaints for DID ${parsed.domain}; retry in ${limit.ttlInSeconds} s`,
      );
    }
    // After the domain's budget: a forged lpSign costs up to 32 DID lookups.
    const proof = await fromDid(
      () => agreementProof(parsed.stored, (id) => options.swapChains.get(id), chain.did),
      `the DID names of the lpSign signer (LP id ${JSON.stringify(parsed.complaint.lpId)})`,
    );
    if (proof.kind === 'unproven')
      throw new AgentError(
        'UNPROVEN_AGREEMENT',
        `${proof.reason}: the Classifier judges such a complaint invalid (case 0), so the Agent does not pay for it`,
      );
    if (proof.kind === 'unchecked')
      log.info({ bid: parsed.bidId, reason: proof.reason }, 'agreement not checked');
    options.onAgreementChecked?.(proof.kind);
    let exists: boolean;
    try {
      exists = await chain.hasComplaint(parsed.bidId);
    } catch (error) {
      log.warn({ err: scrub((error as Error).message).slice(0, 300) }, 'hasComplaint read failed');
      throw new AgentError('CHAIN_UNAVAILABLE', 'the reputation contract could not be read; retry');
    }
    if (exists)
      throw new AgentError('COMPLAINT_EXISTS', `bid ${parsed.bidId} already has a complaint on chain`);
  };

  /** Past agent.maxPaidFailures, a failed complaint is neither re-opened nor replaced by the same domain's. */
  const exhausted = (row: ComplaintRow, domain: string, paid: number) => {
    log.warn(
      { bid: row.bidId, domain, paidFailures: paid },
      'complaint not sent again: it failed on chain too often',
    );
    return new AgentError(
      'COMPLAINT_FAILED_ON_CHAIN',
      `bid ${row.bidId}: ${paid} complaint transactions of DID ${JSON.stringify(domain)} were mined and failed (agent.maxPaidFailures is ${options.maxPaidFailures}); the Agent does not send it again (the contract's submitComplaint takes it from any sender)`,
    );
  };

  // The key and the allow-list are checked before the body is read: a refused client costs no parsing.
  const restricted = async (request: FastifyRequest) => guard.check(request.ip, request.headers['x-api-key']);
  app.post(
    '/submit-complaint',
    { bodyLimit: options.bodyLimit, onRequest: restricted },
    async (request, reply) => {
      const chain = options.chain();
      if (chain === undefined)
        throw new AgentError(
          'CHAIN_UNAVAILABLE',
          'the chain id of agent.rpc could not be read yet (the signature cannot be checked); nothing was accepted, retry',
        );
      const parsed = parseComplaintBody(request.body, {
        chainId: chain.chainId,
        contractAddr: options.contractAddr,
      });
      const known = await stored(() => store.get(parsed.bidId));
      const same =
        known !== undefined &&
        sameComplaint(known, {
          signer: parsed.signer,
          domain: parsed.domain,
          complaint: parsed.stored,
          signature: parsed.signature,
        });
      // A failed complaint does not hold the bid: nothing of it is on chain (store.ts, accept), so another
      // complainant's is taken in its place. Otherwise anyone could fail a bid's complaint first (a DID
      // given away after signing) and lock its genuine complainant out.
      if (known !== undefined && !same && known.status !== 'failed') throw taken(known);
      // Refused before any chain read; the store decides again under the row's lock.
      if (known?.status === 'failed') {
        const paid = paidFailuresOf(known, parsed.domain);
        if (paid >= options.maxPaidFailures) throw exhausted(known, parsed.domain, paid);
      }
      // A complaint under way or done answers its status without asking anyone; a failed one is checked again.
      const checked = known === undefined || known.status === 'failed';
      if (checked) await checkBeforeGas(request, reply, parsed, chain);
      const outcome: AcceptOutcome = await stored(() =>
        store.accept(
          {
            bidId: parsed.bidId,
            complaint: parsed.stored,
            signature: parsed.signature,
            domain: parsed.domain,
            signer: parsed.signer,
          },
          // Only what was checked above is re-opened or replaced: a complaint read under way that failed since
          // answers its status (failed), and its next post is checked again.
          { reopen: checked, replaceFailed: checked, maxPaidFailures: options.maxPaidFailures },
        ),
      );
      if (outcome.kind === 'taken') throw taken(outcome.row);
      if (outcome.kind === 'exhausted') throw exhausted(outcome.row, parsed.domain, outcome.paid);
      if (outcome.kind !== 'repeated')
        log.info(
          {
            bid: parsed.bidId,
            domain: parsed.domain,
            signer: parsed.signer,
            reopened: outcome.kind === 'reopened',
            ...(outcome.kind === 'replaced'
              ? { replaced: { domain: outcome.previous.domain, signer: outcome.previous.signer } }
              : {}),
          },
          'complaint accepted',
        );
      if (outcome.kind === 'reopened') options.onReopened?.();
      options.onOutcome?.(outcome.kind === 'created' ? 'accepted' : outcome.kind);
      return {
        code: 0,
        message: ACCEPT_MESSAGES[outcome.kind],
        ...publicComplaint(outcome.row, scrub),
      };
    },
  );

  app.get('/complaint-status', async (request) => {
    const bid = (request.query as Record<string, unknown>)['bid'];
    if (typeof bid !== 'string' || !BID.test(bid))
      throw new AgentError('INVALID_QUERY', 'bid (query) must be 32 bytes of 0x-prefixed hex');
    const row = await stored(() => store.get(bid));
    if (row === undefined)
      throw new AgentError('COMPLAINT_NOT_FOUND', `no complaint for bid ${bid.toLowerCase()}`);
    return { code: 0, message: 'ok', ...publicComplaint(row, scrub) };
  });

  app.get('/status', async () =>
    JSON.parse(scrub(JSON.stringify({ code: 0, message: 'ok', ...options.status() }))),
  );

  const document = agentOpenApiDocument();
  app.get('/openapi.json', async () => document);
}

function taken(row: ComplaintRow): AgentError {
  return new AgentError(
    'COMPLAINT_EXISTS',
    `bid ${row.bidId} already has another complaint (its own fields and signature) accepted here from DID ${JSON.stringify(row.domain)} (status ${row.status})`,
  );
}

/** What the routes show of a complaint: its progress and transactions, never raw signed transactions. */
export function publicComplaint(row: ComplaintRow, scrub: (text: string) => string = (t) => t) {
  return {
    bid_id: row.bidId,
    status: row.status,
    domain: row.domain,
    complainant: row.signer,
    tx_hash: row.txHash,
    block_number: row.blockNumber,
    nonce: row.nonce,
    already_on_chain: row.alreadyOnChain,
    reason: row.reason === null ? null : scrub(row.reason),
    /** The complainant's: its domain's complaint transactions for the bid mined and failed (gas paid). */
    paid_failures: paidFailures(row),
    transactions: row.txs.map((t) => ({ kind: t.kind, tx_hash: t.hash })),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** Fastify's own refusals (bad JSON, wrong content type, too large, rate limit) mapped to Agent codes. */
function frameworkErrorKind(error: FastifyError): AgentErrorName | undefined {
  const status = error.statusCode ?? 500;
  if (status === 413) return 'BODY_TOO_LARGE';
  if (status === 429) return 'RATE_LIMITED';
  if (status === 415) return 'UNSUPPORTED_MEDIA_TYPE';
  if (status >= 400 && status < 500) return 'INVALID_BODY';
  return undefined;
}

function publicMessage(kind: AgentErrorName, error: FastifyError, bodyLimit: number): string {
  if (kind === 'BODY_TOO_LARGE') return `the body is larger than ${bodyLimit} bytes`;
  if (kind === 'UNSUPPORTED_MEDIA_TYPE') return 'the body must be application/json';
  if (kind === 'RATE_LIMITED') return 'too many requests';
  return `the body is not valid JSON: ${error.message.slice(0, 200)}`;
}
