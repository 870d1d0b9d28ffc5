/** The OpenAPI 3.1 document of the Points routes, served at `/openapi.json`. Hand-written: it is small. */
import { POINTS_ERRORS } from './errors.js';
import { DID_NAME_PATTERN, LP_ID_PATTERN } from './query-params.js';

const errorBody = {
  type: 'object',
  required: ['code', 'message'],
  properties: {
    code: { type: 'integer', enum: Object.values(POINTS_ERRORS).map((e) => e.code) },
    message: { type: 'string' },
  },
};
const errorTable = Object.values(POINTS_ERRORS)
  .map((e) => `| ${e.code} | ${e.status} | ${e.meaning} |`)
  .join('\n');

const json = (schema: object) => ({ content: { 'application/json': { schema } } });
const errors = {
  '400': { description: 'a bad query parameter (INVALID_QUERY)', ...json(errorBody) },
  '404': { description: 'unknown route, DID name or bid', ...json(errorBody) },
  '429': { description: 'too many requests from this client (RATE_LIMITED)', ...json(errorBody) },
  '500': { description: 'internal error', ...json(errorBody) },
  '503': {
    description: 'database or (for did=) DID service unavailable, or the query ran too long (QUERY_TIMEOUT)',
    ...json(errorBody),
  },
};
const q = (name: string, description: string, schema: object, required = false) => ({
  name,
  in: 'query',
  required,
  description,
  schema,
});
const at = q('at', 'answer as of this moment (unix seconds); default: now', {
  type: 'string',
  pattern: '^[0-9]{1,12}$',
});
const address = { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' };
const lpId = q(
  'lp_id',
  'the LP id of the swap agreements',
  { type: 'string', pattern: LP_ID_PATTERN.source },
  true,
);
const limit = q('limit', 'records per page, 1–100 (default 20)', { type: 'string', pattern: '^[0-9]{1,3}$' });
const cursor = q('cursor', 'next_cursor of the previous page', { type: 'string' });

/** An object whose every listed property is always present in the answer. */
const obj = (properties: Record<string, object>) => ({
  type: 'object',
  required: Object.keys(properties),
  properties,
});
const integer = { type: 'integer' };
const text = { type: 'string' };
const nullableInteger = { type: ['integer', 'null'] };
const nullableText = { type: ['string', 'null'] };

const window = obj({
  days: integer,
  from_exclusive: integer,
  to_inclusive: integer,
  rule: text,
});
const tenthsAndPoints = {
  tenths: integer,
  points: { type: 'string', description: 'one decimal, e.g. "0.1"' },
};
const score = {
  score: { type: 'string', description: 'one decimal, e.g. "1.9"' },
  score_tenths: { type: 'integer', description: 'the score in tenths, e.g. 19' },
  at: integer,
  at_source: { enum: ['now', 'query'] },
  basis: obj({ ...tenthsAndPoints, reason: text }),
  deductions: obj({ violations: integer, ...tenthsAndPoints, per_violation_tenths: integer }),
  floored_at_zero: { type: 'boolean' },
  window,
  records: { type: 'string', description: 'the deduction records behind the score' },
};
const stale = { stale: { type: 'boolean' }, fetched_at: nullableInteger };
const decimalOrNull = { type: ['string', 'null'], description: 'one decimal; null without samples' };
const statistics = obj({
  decided_swaps: integer,
  normal_swaps: integer,
  success_rate_percent: decimalOrNull,
  average_response_seconds: decimalOrNull,
  response_time_sum_seconds: integer,
  response_time_samples: integer,
});
const criterion = (actual: object) => obj({ required: text, actual, met: { type: 'boolean' } });
const tier = obj({
  basis: text,
  basis_tenths: integer,
  met: { type: 'boolean' },
  criteria: obj({
    swaps: criterion(integer),
    success_rate: criterion(decimalOrNull),
    average_response_time: criterion(decimalOrNull),
  }),
});
const record = obj({
  bid: text,
  case: { type: 'integer', minimum: 1, maximum: 7 },
  party: { enum: ['user', 'lp'] },
  subject: text,
  rule: text,
  ...tenthsAndPoints,
  block_time: integer,
  decided_on_chain: text,
  chains: obj({ source: text, destination: { type: ['string', 'null'] } }),
  transactions: {
    type: 'array',
    items: obj({ step: text, chain_id: text, tx_hash: text, block_time: integer }),
  },
  counts: { type: 'boolean', description: 'whether it is inside the window and lowers the score' },
});
const records = json(
  obj({
    subject: obj({ kind: { enum: ['user', 'lp'] }, id: text }),
    at: integer,
    window,
    records: { type: 'array', items: record },
    next_cursor: { type: ['string', 'null'] },
  }),
);

export function pointsOpenApi() {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Otmoic reputation points',
      version: '1',
      description: `Scores are kept in tenths (integers) and shown with one decimal. A violation or swap counts while from_exclusive < block_time <= to_inclusive, the window of point.windowDays days ending at \`at\` (default now). An unknown subject gets the score at its basis with no records.\n\nErrors are always JSON {code, message} with a matching HTTP status:\n\n| code | HTTP | meaning |\n|---|---|---|\n${errorTable}`,
    },
    paths: {
      '/user-point': {
        get: {
          summary:
            "a user's score: basis 2 (5 when KYC-verified) minus 0.1 per violation in the window, at least 0",
          parameters: [
            q('address', 'the user address (give this or did)', address),
            q('did', 'a DID name; its owner address is asked of the DID support service', {
              type: 'string',
              pattern: DID_NAME_PATTERN.source,
              examples: ['alice.example'],
            }),
            at,
          ],
          responses: {
            '200': {
              description: 'the score and what it is made of',
              ...json(
                obj({
                  ...score,
                  subject: obj({
                    kind: { const: 'user' },
                    address: text,
                    did_names: { type: 'array', items: text },
                    resolved_from_did: {
                      description:
                        'with did=: the name asked for and its owner lookup (stale: the last known owner, the DID support service being down); null with address=',
                      oneOf: [obj({ name: text, ...stale }), { type: 'null' }],
                    },
                  }),
                  kyc: obj({
                    verified: { type: 'boolean' },
                    known: { type: 'boolean' },
                    ...stale,
                    note: text,
                  }),
                  did: obj({
                    names: { type: 'array', items: text },
                    stale: {
                      type: 'boolean',
                      description:
                        "whether any DID answer behind this one is the last known one: the address's names, or (did=) the name's owner",
                    },
                    fetched_at: nullableInteger,
                  }),
                }),
              ),
            },
            ...errors,
          },
        },
      },
      '/lp-point': {
        get: {
          summary:
            "an LP's score: basis from the tier table over the window minus 0.1 per violation, at least 0",
          parameters: [lpId, at],
          responses: {
            '200': {
              description: 'the score, the statistics and every tier row with its three criteria',
              ...json(
                obj({
                  ...score,
                  subject: obj({ kind: { const: 'lp' }, lp_id: text }),
                  statistics,
                  tiers: { type: 'array', items: tier },
                }),
              ),
            },
            ...errors,
          },
        },
      },
      '/user-deduction-records': {
        get: {
          summary: "a user's deduction records that happened by `at`, newest first",
          parameters: [q('address', 'the user address', address, true), at, limit, cursor],
          responses: { '200': { description: 'one page', ...records }, ...errors },
        },
      },
      '/lp-deduction-records': {
        get: {
          summary: "an LP's deduction records that happened by `at`, newest first",
          parameters: [lpId, at, limit, cursor],
          responses: { '200': { description: 'one page', ...records }, ...errors },
        },
      },
      '/complaint': {
        get: {
          summary: 'a complaint, its verdict (or pending and what it waits for) and the evidence',
          parameters: [q('bid', 'the bid id', { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' }, true), at],
          responses: {
            '200': {
              description: 'status decided or pending',
              ...json(
                obj({
                  bid: text,
                  status: { enum: ['decided', 'pending'] },
                  complaint: { type: ['object', 'null'] },
                  complaints_on_chain: {
                    type: 'array',
                    items: obj({
                      chain_id: text,
                      tx_hash: text,
                      block_number: integer,
                      block_time: integer,
                      complainant: text,
                      fields: { type: 'object' },
                    }),
                  },
                  verdict: {
                    oneOf: [
                      obj({
                        outcome: { enum: ['normal', 'violation', 'invalid_complaint', 'unknown'] },
                        case: { type: ['integer', 'null'], minimum: 0, maximum: 7 },
                        party: { enum: ['user', 'lp', null] },
                        subject: nullableText,
                        rule: text,
                        block_time: integer,
                        decided_on_chain: text,
                        user: nullableText,
                        lp_id: nullableText,
                        transactions: {
                          type: 'array',
                          items: obj({ step: text, chain_id: text, tx_hash: text, block_time: integer }),
                        },
                      }),
                      { type: 'null' },
                    ],
                  },
                  evidence: { type: ['object', 'null'] },
                  pending: { type: ['object', 'null'] },
                }),
              ),
            },
            ...errors,
          },
        },
      },
      '/dashboard/verdicts': {
        get: {
          summary:
            'the dashboard: verdicts by kind ("normal", "case 1" … "case 7", …) in up to 24 buckets of block time',
          description:
            "Only the verdicts of the look-back window (point.windowDays days) ending at the newest verdict's block time, newest − windowDays·86400 < block_time <= newest; an earlier `since` is clamped to it.",
          parameters: [
            q(
              'since',
              'only verdicts with a block time after this (unix seconds), clamped to the look-back window',
              {
                type: 'string',
                pattern: '^[0-9]{1,12}$',
              },
            ),
          ],
          responses: {
            '200': {
              description: 'counts per kind and bucket',
              ...json({
                type: 'object',
                required: ['bucket_seconds', 'buckets', 'series', 'total'],
                properties: {
                  bucket_seconds: { type: 'integer' },
                  buckets: { type: 'array', items: { type: 'integer' } },
                  series: {
                    type: 'object',
                    additionalProperties: { type: 'array', items: { type: 'integer' } },
                  },
                  total: { type: 'integer' },
                },
              }),
            },
            ...errors,
          },
        },
      },
      '/dashboard/score-history': {
        get: {
          summary:
            "the dashboard's score history of a user (address) or an LP (lp_id), exactly one: the score as of each block time of its newest 100 deduction records, oldest first",
          parameters: [
            q('address', 'the user address', address),
            q('lp_id', 'the LP id', { type: 'string', pattern: LP_ID_PATTERN.source }),
          ],
          responses: {
            '200': {
              description: 'the points of the history',
              ...json(
                obj({
                  subject: obj({ kind: { enum: ['user', 'lp'] }, id: text }),
                  points: { type: 'array', items: obj({ at: integer, score_tenths: integer }) },
                }),
              ),
            },
            ...errors,
          },
        },
      },
      '/dashboard/pipeline': {
        get: {
          summary:
            "the dashboard: heights and lag per chain, consumer lag, handled and dead-lettered messages per group, commands by status (this process's services)",
          responses: {
            '200': {
              description: 'pipeline health',
              ...json({
                type: 'object',
                required: [
                  'chains',
                  'consumers',
                  'commands',
                  'failures',
                  'oldestUnconfirmedSeconds',
                  'oldestWaitingSeconds',
                  'classifier',
                ],
                properties: {
                  chains: { type: 'array', items: { type: 'object', required: ['chain'] } },
                  consumers: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['group', 'lag', 'handled', 'deadLettered'],
                      properties: {
                        group: { type: 'string' },
                        lag: { type: 'integer', description: 'messages not yet committed' },
                        handled: { type: 'integer', description: 'handled since this process started' },
                        deadLettered: {
                          type: 'integer',
                          description: 'moved to a dead-letter topic since this process started',
                        },
                      },
                    },
                  },
                  commands: { type: 'object' },
                  failures: {
                    type: 'object',
                    description:
                      'per sending service (relay, agent): failures of its jobs so far, re-opened ones again; never decreases',
                    additionalProperties: { type: 'integer' },
                  },
                  oldestUnconfirmedSeconds: { type: 'object' },
                  oldestWaitingSeconds: {
                    type: 'object',
                    description:
                      'per sending service, then per status before signing (agent: accepted, scheduled; relay: accepted): seconds the job longest in it has waited there',
                    additionalProperties: { type: 'object', additionalProperties: { type: 'number' } },
                  },
                  classifier: { type: 'object' },
                },
              }),
            },
            ...errors,
          },
        },
      },
      '/lp-ranking': {
        get: {
          summary:
            'LPs with a counted swap or a violation in the window, best score first (for credit_score)',
          parameters: [
            at,
            q('limit', 'how many, 1–1000 (default 100)', { type: 'string', pattern: '^[0-9]{1,4}$' }),
          ],
          responses: {
            '200': {
              description: 'the ranking',
              ...json(
                obj({
                  at: integer,
                  window,
                  lps: {
                    type: 'array',
                    items: obj({
                      rank: integer,
                      lp_id: text,
                      score: text,
                      score_tenths: integer,
                      basis_tenths: integer,
                      violations: integer,
                      statistics,
                    }),
                  },
                  total: { type: 'integer', description: 'LPs ranked before the limit' },
                }),
              ),
            },
            ...errors,
          },
        },
      },
    },
  };
}
