import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Counter } from 'prom-client';
import { z } from 'zod';
import { CodedError } from '../../shared/errors/coded-error.js';
import { accessGuard } from '../../shared/runtime/access.js';
import { eventBodySchema, heightUpdateSchema } from './body-schema.js';
import type { Stream } from './heights.js';
import { HeightConflictError, type Ingestor } from './ingest.js';
import { RejectedEvent } from './normalize.js';
import { connectorOpenApi } from './openapi.js';
import { RpcReaderStoppedError } from './rpc-reader.js';

/**
 * The `onRejected` of registerCallbackRoutes counting into connector_rejected_bodies_total: by chain only when
 * the path named a configured one.
 */

/** Largest callback body: a merged chunk or history range of a busy chain (every other route takes 64 KiB). */
export const CALLBACK_BODY_LIMIT = 10 * 1024 * 1024;
export const countRejections =
  (rejected: Counter<'chain' | 'reason'>) =>
  (reason: string, chain?: string): void =>
    void rejected.inc(chain === undefined ? { reason } : { chain, reason });

/** Who may post callbacks: `connector.callbackToken` and `connector.allowIps` (both optional). */
export interface CallbackAccess {
  callbackToken?: string;
  allowIps: readonly string[];
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * The query the Connector adds to the callback URL of its history request for blocks `start`…: a chunk posted
 * there is history, whose range the Connector chose, never the first chunk of a live delivery that restarted
 * (Ingestor.liveStarting). `from` is the request's first block: a history's first chunk may start there, in
 * the middle of its 5 blocks (our chain client's does), and a chunk says only its height.
 */
export const historyQuery = (start: number): string => `source=history&from=${start}`;
const querySchema = z.looseObject({
  source: z
    .literal('history', { error: 'source may only be "history" (the history callback URLs)' })
    .optional(),
  from: z
    .string()
    .regex(/^\d{1,15}$/, 'from must be a block number (the first block of a history request)')
    .transform(Number)
    .optional(),
});

/**
 * POST {callback path}[/:token]/:chainId/:stream[?source=history&from=N] — what chain clients call. `stream` is
 * `swap` (Otmoic events) or `reputation` (complaint events, only of a chain whose chainClients entry has
 * reputationContractAddr; otherwise answered 404 as an unknown chain); `source=history` marks the URLs of our history
 * requests. Bodies: `update_height` (merged chunk or heartbeat) or one event. Replies `{code, message}`: 200
 * once the body is safely published (or known), 400 for a body that is refused whole, 503 when the chain
 * client should retry. With `callbackToken` the token is the first path
 * segment: a wrong one answers exactly as an unknown route (404), compared in constant time; a client IP
 * outside `allowIps` gets 403. `GET /openapi.json` documents it (openapi.ts).
 */
export function registerCallbackRoutes(
  app: FastifyInstance,
  basePath: string,
  ingestor: Ingestor,
  /** A refused request, by reason; `chain` once the path names a configured chain. */
  onRejected: (reason: string, chain?: string) => void,
  access: CallbackAccess = { allowIps: [] },
): void {
  const document = connectorOpenApi(basePath, ingestor.chainIds(), {
    token: access.callbackToken !== undefined,
    allowIps: access.allowIps.length > 0,
  });
  app.get('/openapi.json', async () => document);
  const guard = accessGuard({
    apiKeys: [], // chain clients post to the URL they were given and send no headers of ours
    allowIps: access.allowIps,
    refuse: (_kind, message) => new CodedError('FORBIDDEN', message),
    allowIpsKey: 'connector.allowIps',
  });
  const token = access.callbackToken === undefined ? undefined : digest(access.callbackToken);
  app.post<{ Params: { token?: string; chainId: string; stream: string } }>(
    `${basePath}${token ? '/:token' : ''}/:chainId/:stream`,
    {
      // A merged chunk of a busy chain, or a history range, carries many events.
      bodyLimit: CALLBACK_BODY_LIMIT,
      // Before the body is read: up to 10 MiB is read and parsed for a chain client, not for a client that may
      // not post (and a malformed body behind a wrong token would answer 400, not as an unknown route).
      onRequest: async (request, reply) => {
        try {
          guard.check(request.ip, undefined);
        } catch (err) {
          onRejected('forbidden');
          return reply.code(403).send({ code: 403, message: (err as Error).message });
        }
        if (token && !timingSafeEqual(token, digest(request.params.token ?? ''))) {
          onRejected('unknown_route');
          // The server's own answer for no route, so the two cannot drift apart.
          reply.callNotFound();
          return reply;
        }
      },
    },
    async (request, reply) => {
      const { chainId, stream } = request.params;
      const query = querySchema.safeParse(request.query);
      if (!query.success) {
        onRejected('malformed');
        return reply.code(400).send({ code: 400, message: z.prettifyError(query.error) });
      }
      // A stream the chain does not have (reputation without a reputationContractAddr) as an unknown chain.
      if (!ingestor.follows(chainId, stream)) {
        onRejected('unknown_chain');
        return reply
          .code(404)
          .send({ code: 404, message: `no chain client is configured for chain ${chainId} (${stream})` });
      }
      const body = request.body as { type?: unknown } | undefined;
      const schema = body?.type === 'update_height' ? heightUpdateSchema : eventBodySchema;
      const parsed = schema.safeParse(body);
      if (!parsed.success) {
        onRejected('malformed', chainId);
        const message = `invalid ${body?.type === 'update_height' ? 'update_height' : 'event'} body: ${z.prettifyError(parsed.error)}`;
        request.log.warn({ chain: chainId, stream, reason: 'malformed', message }, 'callback body refused');
        return reply.code(400).send({ code: 400, message });
      }
      try {
        const outcome =
          'height' in parsed.data && parsed.data.type === 'update_height'
            ? await ingestor.heightUpdate(chainId, stream as Stream, parsed.data, {
                history: query.data.source === 'history',
                from: query.data.source === 'history' ? query.data.from : undefined,
              })
            : await ingestor.singleEvent(
                chainId,
                stream as Stream,
                parsed.data as z.infer<typeof eventBodySchema>,
              );
        return { code: 200, message: outcome };
      } catch (err) {
        if (err instanceof RejectedEvent) {
          // Its chain client retries or gives up: either way the operator should see why.
          request.log.warn(
            { chain: chainId, stream, reason: err.reason, message: err.message },
            'callback body refused',
          );
          return reply.code(400).send({ code: 400, message: err.message });
        }
        if (err instanceof HeightConflictError)
          return reply.code(503).send({ code: 503, message: err.message });
        // A read the stop cut off (the chunk's block time): nothing was stored; posted again after the restart.
        if (err instanceof RpcReaderStoppedError)
          return reply.code(503).send({ code: 503, message: err.message });
        throw err;
      }
    },
  );
}
