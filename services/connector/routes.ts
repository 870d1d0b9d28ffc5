import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { eventBodySchema, heightUpdateSchema } from './body-schema.js';
import { STREAMS, type Stream } from './heights.js';
import { HeightConflictError, type Ingestor } from './ingest.js';
import { RejectedEvent } from './normalize.js';
import { connectorOpenApi } from './openapi.js';

/**
 * POST {callback path}/:chainId/:stream — what chain clients call. `stream` is `swap` (Otmoic events) or
 * `reputation` (complaint events). Bodies: `update_height` (merged chunk or heartbeat) or one event. Replies
 * `{code, message}`: 200 once the body is safely published (or known), 400 for a body that is refused whole,
 * 503 when the chain client should retry. `GET /openapi.json` documents it (openapi.ts).
 */
export function registerCallbackRoutes(
  app: FastifyInstance,
  basePath: string,
  ingestor: Ingestor,
  onRejected: (reason: string) => void,
): void {
  const document = connectorOpenApi(basePath, ingestor.chainIds());
  app.get('/openapi.json', async () => document);
  app.post<{ Params: { chainId: string; stream: string } }>(
    `${basePath}/:chainId/:stream`,
    async (request, reply) => {
      const { chainId, stream } = request.params;
      if (!ingestor.chain(chainId) || !(STREAMS as readonly string[]).includes(stream)) {
        onRejected('unknown_chain');
        return reply
          .code(404)
          .send({ code: 404, message: `no chain client is configured for chain ${chainId} (${stream})` });
      }
      const body = request.body as { type?: unknown } | undefined;
      const schema = body?.type === 'update_height' ? heightUpdateSchema : eventBodySchema;
      const parsed = schema.safeParse(body);
      if (!parsed.success) {
        onRejected('malformed');
        return reply.code(400).send({
          code: 400,
          message: `invalid ${body?.type === 'update_height' ? 'update_height' : 'event'} body: ${z.prettifyError(parsed.error)}`,
        });
      }
      try {
        const outcome =
          'height' in parsed.data && parsed.data.type === 'update_height'
            ? await ingestor.heightUpdate(chainId, stream as Stream, parsed.data)
            : await ingestor.singleEvent(
                chainId,
                stream as Stream,
                parsed.data as z.infer<typeof eventBodySchema>,
              );
        return { code: 200, message: outcome };
      } catch (err) {
        if (err instanceof RejectedEvent) return reply.code(400).send({ code: 400, message: err.message });
        if (err instanceof HeightConflictError)
          return reply.code(503).send({ code: 503, message: err.message });
        throw err;
      }
    },
  );
}
