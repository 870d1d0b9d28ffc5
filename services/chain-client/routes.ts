import { randomUUID } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { urlOrigin } from '../../shared/config/redact.js';
import { MAX_CALLBACK_URL_LENGTH, holdsCredentials } from '../../shared/otmoic/support-register.js';
import { accessGuard } from '../../shared/runtime/access.js';
import { withDeadline } from '../../shared/runtime/deadline.js';
import type { Logger } from '../../shared/logging/logger.js';
import { RpcRateLimitedError } from './chain-reader.js';
import type { RegistrationKind } from './delivery-plan.js';
import { CHAIN_CLIENT_ERRORS, noReputationContract, SUPPORT_ERROR } from './errors.js';
import type { Follower } from './follower.js';
import type { ChainClientStore } from './store.js';

const CALLBACK_KEYS = {
  swap: [
    'on_transfer_out',
    'on_transfer_in',
    'on_confirm_out',
    'on_confirm_in',
    'on_refunded_out',
    'on_refunded_in',
    'on_height_update',
  ],
  reputation: ['on_reputation', 'on_height_update'],
} as const;

/**
 * Link-local hosts (169.254.0.0/16, fe80::/10) are where cloud metadata services answer: a registration
 * there would have the chain client post to them forever. Private and loopback hosts stay allowed (the
 * Connector is one); `chainClient.allowIps` says who may register.
 */
/** A URL's hostname without the brackets of an IPv6 literal. */
const bareHost = (host: string) => host.replace(/^\[|\]$/g, '');
const linkLocal = (host: string) => {
  const h = bareHost(host).toLowerCase();
  return (
    /^169\.254\./.test(h) ||
    /^fe[89ab][0-9a-f]:/.test(h) ||
    /^::ffff:169\.254\./.test(h) ||
    /^::ffff:a9fe:/.test(h) ||
    // AWS's instance metadata service over IPv6 (a unique local address, not link-local).
    /^fd00:ec2:(0:){0,5}:?254$/.test(h)
  );
};
const url = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL', abort: true })
  .max(MAX_CALLBACK_URL_LENGTH, `must be at most ${MAX_CALLBACK_URL_LENGTH} characters`)
  // fetch refuses a URL holding credentials: such a callback was taken and never delivered to.
  .refine(
    (u) => !holdsCredentials(new URL(u)),
    'must not hold user:password@ (put a token in its path or query)',
  )
  .refine(
    (u) => !linkLocal(URL.parse(u)?.hostname ?? ''),
    'must not be a link-local address (a metadata service)',
  );
const callbackSchema = (kind: RegistrationKind) =>
  z
    .record(z.string(), url)
    .refine((cb) => Object.keys(cb).length > 0, 'callback must name at least one URL')
    .refine((cb) => Object.keys(cb).every((k) => (CALLBACK_KEYS[kind] as readonly string[]).includes(k)), {
      error: `callback keys must be among ${CALLBACK_KEYS[kind].join(', ')}`,
    });

const block = z.number().int().nonnegative();

export interface SupportRoutesOptions {
  store: ChainClientStore;
  follower: Follower;
  log: Logger;
  /** `chainClient.systemChainId`, named in refusals. */
  systemChainId: string;
  /**
   * `chainClient.reputationContractAddr`. Without it no complaint log is read, so the reputation routes
   * (register_reputation, history_reputation) are refused (30231): taken, their heartbeats told the receiver
   * that no complaint happened in blocks nobody read.
   */
  reputationContract: string | undefined;
  /** `chainClient.allowIps`: who may call the support routes (empty: anyone, as the original). */
  allowIps?: readonly string[];
  /** Most registrations and pending history tasks an instance keeps (defaults below). */
  limits?: { registrations: number; historyTasks: number };
  /** The addresses a callback host name resolves to (default: the system resolver). */
  resolve?: (host: string) => Promise<string[]>;
}

/** How long a callback host name may take to resolve; after that it is taken as not resolving now. */
export const RESOLVE_TIMEOUT_MS = 2_000;

const systemResolve = async (host: string) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * The refusal of a callback whose host name resolves to a link-local address (`169-254-169-254.nip.io`,
 * `metadata.google.internal`): the literal check cannot see them. A name that does not resolve now is let
 * through (it may later); a name that changes its answer after this check is not caught (DNS rebinding).
 */
async function linkLocalByName(
  callback: Record<string, string>,
  resolve: (host: string) => Promise<string[]>,
): Promise<string | undefined> {
  for (const u of Object.values(callback)) {
    const host = new URL(u).hostname;
    if (isIP(bareHost(host)) !== 0) continue;
    // Bounded: a slow resolver must not hold the answer past its caller's own timeout.
    const addresses = await withDeadline(resolve(host), RESOLVE_TIMEOUT_MS, () => new Error('slow')).catch(
      () => [],
    );
    if (addresses.some(linkLocal))
      return `invalid callback: ${urlOrigin(u)} resolves to a link-local address (a metadata service)`;
  }
  return undefined;
}

/**
 * What an instance keeps at most: each registration costs a post per chunk for ever, each history task a read
 * of its range through the RPC; with `allowIps` empty anyone may ask for them.
 */
export const SUPPORT_LIMITS = { registrations: 1_000, historyTasks: 100 };

/** How often a refused reputation route is warned about (the refusals between are logged at debug). */
export const UNSERVED_WARN_EVERY_MS = 15 * 60_000;

/**
 * The support API of the original EVM chain client (spec/otmoic.md §4), with its exact success bodies and
 * messages. Refusals answer `{code: 30209, message}` like the original, with HTTP 400 for invalid input; ours
 * (errors.ts): 30231 for a reputation route of an instance without a reputation contract.
 */
export function registerSupportRoutes(app: FastifyInstance, options: SupportRoutesOptions): void {
  const { store, follower, log } = options;
  const limits = options.limits ?? SUPPORT_LIMITS;
  const guard = accessGuard({
    apiKeys: [],
    allowIps: options.allowIps ?? [],
    refuse: (_kind, message) => new Error(message),
    allowIpsKey: 'chainClient.allowIps',
  });
  app.addHook('onRequest', async (request, reply) => {
    // The route matched, not the raw URL: the router decodes `/%73upport/…` to the same route.
    if (!request.routeOptions.url?.startsWith('/support/')) return;
    try {
      guard.check(request.ip, undefined);
    } catch (err) {
      return reply.code(403).send({ code: 403, message: (err as Error).message });
    }
  });

  /** `{callback, merge?}` of register and unregister, or the refusal's message. */
  const registrationOf = (kind: RegistrationKind, request: { body: unknown }) => {
    const body = asObject(request.body);
    // `== null`: a member sent as null is missing too, as the original's `== undefined` took it.
    if (body.callback == null) return 'callbackUrl is a required parameter ';
    const callback = callbackSchema(kind).safeParse(body.callback);
    if (!callback.success) return `invalid callback: ${z.prettifyError(callback.error)}`;
    const merge = z.boolean().optional().safeParse(body.merge);
    if (!merge.success) return 'merge must be a boolean';
    return { callback: callback.data, merge: merge.data ?? false };
  };

  // The URLs by their origin only: a Connector's path holds its callback token.
  const loggable = (r: { callback: Record<string, string>; merge: boolean }) => ({
    callback: Object.fromEntries(Object.entries(r.callback).map(([k, u]) => [k, urlOrigin(u)])),
    merge: r.merge,
  });

  const resolve = options.resolve ?? systemResolve;
  /**
   * Refusals of reputation routes since each route's last warning. A misconfigured Connector asks again at
   * every renewal (about once a minute): one warning per route every UNSERVED_WARN_EVERY_MS, the others at debug.
   */
  const unservedWarned = new Map<string, { at: number; since: number }>();
  /** The refusal of a reputation route by an instance without a reputation contract, else undefined. */
  const unserved = (kind: RegistrationKind, reply: ReplyLike, route: string) => {
    if (kind !== 'reputation' || options.reputationContract !== undefined) return undefined;
    const now = Date.now();
    const warned = unservedWarned.get(route);
    if (warned === undefined || now - warned.at >= UNSERVED_WARN_EVERY_MS) {
      log.warn(
        { route, refusedSinceLastWarning: warned?.since ?? 0 },
        "reputation route refused: this chain client has no chainClient.reputationContractAddr (set it, or remove reputationContractAddr from the caller's chainClients entry of this chain)",
      );
      unservedWarned.set(route, { at: now, since: 0 });
    } else {
      warned.since++;
      log.debug({ route }, 'reputation route refused (no reputation contract)');
    }
    reply.code(CHAIN_CLIENT_ERRORS.NO_REPUTATION_CONTRACT.statuses[0]);
    return noReputationContract(options.systemChainId);
  };

  const register = (kind: RegistrationKind) => async (request: { body: unknown }, reply: ReplyLike) => {
    const refused = unserved(kind, reply, 'register_reputation');
    if (refused) return refused;
    const registration = registrationOf(kind, request);
    if (typeof registration === 'string') return refuse(reply, registration);
    const metadata = await linkLocalByName(registration.callback, resolve);
    if (metadata !== undefined) return refuse(reply, metadata);
    const outcome = await store.register(
      kind,
      registration.callback,
      registration.merge,
      limits.registrations,
    );
    if (outcome === 'exists') return { code: SUPPORT_ERROR, message: 'callbackUrl is already registered' };
    if (outcome === 'full') {
      log.warn({ kind, limit: limits.registrations }, 'registration refused: the instance holds its limit');
      reply.code(429);
      return {
        code: SUPPORT_ERROR,
        message: `this chain client holds ${limits.registrations} registrations, its limit: unregister one first`,
      };
    }
    log.info({ kind, ...loggable(registration) }, 'callback registered');
    return { code: 200, message: 'register succeed' };
  };

  // Ours: the original kept registrations in memory until it restarted; ours are kept until removed here (the
  // relay removes a relay server's previous URLs when it registers new ones).
  const unregister = (kind: RegistrationKind) => async (request: { body: unknown }, reply: ReplyLike) => {
    const registration = registrationOf(kind, request);
    if (typeof registration === 'string') return refuse(reply, registration);
    const removed = await store.unregister(kind, registration.callback, registration.merge);
    if (!removed) return { code: SUPPORT_ERROR, message: 'callbackUrl is not registered' };
    log.info({ kind, ...loggable(registration) }, 'callback unregistered');
    return { code: 200, message: 'unregister succeed' };
  };

  const history = (kind: RegistrationKind) => async (request: { body: unknown }, reply: ReplyLike) => {
    const refused = unserved(kind, reply, 'history_reputation');
    if (refused) return refused;
    const body = asObject(request.body);
    if (body.start == null) return refuse(reply, 'start is a required parameter ');
    if (body.end == null) return refuse(reply, 'endBlock is a required parameter ');
    if (body.callback == null) return refuse(reply, 'callbackUrl is a required parameter ');
    const start = block.safeParse(body.start);
    const end = block.safeParse(body.end);
    if (!start.success || !end.success)
      return refuse(reply, 'start and end must be block numbers (integers >= 0)');
    if (start.data > end.data) return refuse(reply, `start (${start.data}) is after end (${end.data})`);
    const callback = callbackSchema(kind).safeParse(body.callback);
    if (!callback.success) return refuse(reply, `invalid callback: ${z.prettifyError(callback.error)}`);
    const metadata = await linkLocalByName(callback.data, resolve);
    if (metadata !== undefined) return refuse(reply, metadata);
    let confirmed: number;
    try {
      confirmed = await follower.confirmedHead();
    } catch (err) {
      // The node is down or hung (its errors carry no URL: ChainReader): the caller should retry, not give up.
      log.warn({ err: (err as Error).message }, 'history request: the chain head could not be read');
      reply.code(503);
      // The endpoint's Retry-After, passed on: asking again sooner would be refused the same way.
      if (err instanceof RpcRateLimitedError && err.retryInMs > 0)
        reply.header('retry-after', String(Math.ceil(err.retryInMs / 1_000)));
      return { code: SUPPORT_ERROR, message: 'the chain head could not be read; retry later' };
    }
    if (end.data > confirmed)
      return refuse(reply, `end (${end.data}) is beyond the confirmed head (${confirmed})`);
    const mergeField = z.boolean().optional().safeParse(body.merge);
    if (!mergeField.success) return refuse(reply, 'merge must be a boolean');
    const merge = mergeField.data === true;
    // Stored before the answer: the follower queues it range by range, and resumes it after an error or a
    // restart (Follower.historyStep). The same request while its task runs is that task (a retry after a lost
    // answer): answered as the first was, nothing started again.
    const added = await store.addHistoryTask(
      {
        lane: `history:${randomUUID()}`,
        kind,
        callback: callback.data,
        merge,
        start: start.data,
        end: end.data,
      },
      limits.historyTasks,
    );
    if (added.outcome === 'full') {
      reply.code(429);
      return {
        code: SUPPORT_ERROR,
        message: `${limits.historyTasks} history tasks are pending, the limit: retry once one has finished`,
      };
    }
    const about = { kind, start: start.data, end: end.data, task: added.id };
    if (added.outcome === 'running') log.info(about, 'history request repeated: its task runs already');
    else {
      follower.wake();
      log.info(about, 'history task started');
    }
    return { code: 200, message: 'history task started' };
  };

  app.post('/support/register', register('swap'));
  app.post('/support/register_reputation', register('reputation'));
  app.post('/support/unregister', unregister('swap'));
  app.post('/support/unregister_reputation', unregister('reputation'));
  app.post('/support/history', history('swap'));
  app.post('/support/history_reputation', history('reputation'));
}

interface ReplyLike {
  code(status: number): ReplyLike;
  header(name: string, value: string): ReplyLike;
}

function refuse(reply: ReplyLike, message: string) {
  reply.code(400);
  return { code: SUPPORT_ERROR, message };
}

function asObject(body: unknown): Record<string, unknown> {
  return body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}
