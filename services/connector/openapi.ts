/**
 * The OpenAPI 3.1 document of the Connector's callback route, served at `/openapi.json`: what chain clients
 * post (spec/otmoic.md §4). The bodies are generated from the zod schemas the route parses them with
 * (body-schema.ts), so the document cannot drift from the validation.
 */
import { z } from 'zod';
import { eventBodySchema, heightUpdateSchema } from './body-schema.js';
import { STREAMS } from './heights.js';
import { INGEST_OUTCOMES } from './ingest.js';

const bodySchema = (schema: z.ZodType) => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input', target: 'draft-2020-12' });
  return rest;
};
const errorBody = {
  type: 'object',
  required: ['code', 'message'],
  properties: { code: { type: 'integer', description: 'the HTTP status' }, message: { type: 'string' } },
};
const json = (schema: object) => ({ content: { 'application/json': { schema } } });
const error = (description: string) => ({ description, ...json(errorBody) });

export function connectorOpenApi(
  basePath: string,
  chainIds: readonly string[],
  access: { token: boolean; allowIps: boolean } = { token: false, allowIps: false },
) {
  // The token's value is a secret: only its place in the path is documented.
  const tokenParameter = {
    name: 'token',
    in: 'path',
    required: true,
    description:
      'connector.callbackToken, part of every callback URL the Connector registers; a wrong one answers 404 as an unknown route',
    schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{16,512}$' },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Otmoic reputation Connector: chain-client callbacks',
      version: '1',
      description:
        "Where the chain clients registered by the Connector post what they see (the original chain client's on_height_update / on_event bodies). A body is validated whole: a bad one is refused with 400 and changes nothing. A 200 means the body is safely stored and published (or was already known); on 503 the chain client retries. Every answer is JSON {code, message}; code is the HTTP status.",
    },
    paths: {
      [`${basePath}${access.token ? '/{token}' : ''}/{chainId}/{stream}`]: {
        post: {
          summary: 'a merged chunk or heartbeat (update_height), or one event',
          parameters: [
            ...(access.token ? [tokenParameter] : []),
            {
              name: 'chainId',
              in: 'path',
              required: true,
              description: 'the system chain id of a configured chain client',
              schema: { type: 'string', enum: [...chainIds] },
            },
            {
              name: 'stream',
              in: 'path',
              required: true,
              description:
                'swap: Otmoic swap events; reputation: complaint events, only of a chain whose chainClients entry has reputationContractAddr (else 404)',
              schema: { type: 'string', enum: [...STREAMS] },
            },
            {
              name: 'source',
              in: 'query',
              required: false,
              description:
                'history: the callback URL of a history request the Connector made (its chunks cover the range it asked for); absent on the registered live URLs',
              schema: { type: 'string', enum: ['history'] },
            },
            {
              name: 'from',
              in: 'query',
              required: false,
              description:
                'with source=history: the first block of the history request; its first chunk may start there, mid-chunk, so a chunk is taken as covering its blocks from here at most',
              schema: { type: 'string', pattern: '^\\d{1,15}$' },
            },
          ],
          requestBody: {
            required: true,
            ...json({ oneOf: [bodySchema(heightUpdateSchema), bodySchema(eventBodySchema)] }),
          },
          responses: {
            '200': {
              description: 'stored and published, known already, a gap found (backfill requested) or held',
              ...json({
                type: 'object',
                required: ['code', 'message'],
                properties: { code: { const: 200 }, message: { enum: [...INGEST_OUTCOMES] } },
              }),
            },
            '400': error(
              'the body is not JSON, or not a valid update_height or event body, or its height or block is more than connector.maxBlocksAhead above the stored height, or source is not history, or from is not a block number (nothing changed)',
            ),
            ...(access.allowIps
              ? { '403': error("the client's IP is not in connector.allowIps (nothing changed)") }
              : {}),
            '404': error(
              access.token
                ? 'no chain client is configured for this chain id and stream, or no such route (a wrong or missing token included)'
                : 'no chain client is configured for this chain id and stream, or no such route',
            ),
            '413': error('the body is larger than the limit'),
            '415': error('the body is not application/json'),
            '500': error(
              'internal error, the database being unavailable included (nothing internal is said)',
            ),
            '503': error('the stored height moved concurrently (another Connector process): retry'),
          },
        },
      },
    },
  };
}
