/** The OpenAPI 3.1 document of the Agent, served at `/openapi.json`. Hand-written: it is small. */
import { COMPLAINT_MEMBER_MAX_LENGTH } from './complaint-body.js';
import { AGENT_ERRORS } from './errors.js';
import { ACCEPT_MESSAGES, COMPLAINT_STATUSES } from './store.js';

const codes = (...names: (keyof typeof AGENT_ERRORS)[]) => names.map((n) => AGENT_ERRORS[n].code);
const errorBody = (names: (keyof typeof AGENT_ERRORS)[]) => ({
  type: 'object',
  required: ['code', 'message'],
  properties: { code: { type: 'integer', enum: codes(...names) }, message: { type: 'string' } },
});
const json = (schema: object) => ({ content: { 'application/json': { schema } } });
const refusal = (description: string, ...names: (keyof typeof AGENT_ERRORS)[]) => ({
  description: `${description} (${codes(...names).join(', ')})`,
  ...json(errorBody(names)),
});
const errorTable = Object.values(AGENT_ERRORS)
  .map((e) => `| ${e.code} | ${e.status} | ${e.meaning} |`)
  .join('\n');

const uint64 = {
  description: 'uint64: a JSON integer up to 2^53-1 or a decimal string',
  oneOf: [
    { type: 'integer', minimum: 0, maximum: 9007199254740991 },
    { type: 'string', pattern: '^[0-9]{1,20}$' },
  ],
};
const uint256 = {
  type: 'string',
  pattern: '^(0x[0-9a-fA-F]{1,64}|[0-9]{1,78})$',
  description: "uint256 holding an address: 0x-hex as the SDK's toHexAddress gives it, or a decimal string",
};
const text = (member: keyof typeof COMPLAINT_MEMBER_MAX_LENGTH) => ({
  type: 'string',
  maxLength: COMPLAINT_MEMBER_MAX_LENGTH[member],
  description: `at most ${COMPLAINT_MEMBER_MAX_LENGTH[member]} UTF-8 bytes (for ASCII, characters): the Agent's wallet pays gas per byte`,
});
const complaint = {
  type: 'object',
  description:
    'The Complaint struct of the reputation contract (spec/otmoic.md §5), as the SDK sends it; signed by the complainant with EIP-712 under {name: "Otmoic Reputation", version: "1", chainId, verifyingContract: agent.contractAddr}',
  required: [
    'srcChainId',
    'srcAddress',
    'srcToken',
    'dstChainId',
    'dstAddress',
    'dstToken',
    'srcAmount',
    'dstAmount',
    'dstNativeAmount',
    'requestor',
    'lpId',
    'expectedSingleStepTime',
    'tolerantSingleStepTime',
    'earliestRefundTime',
    'agreementReachedTime',
    'userSign',
    'lpSign',
  ],
  properties: {
    srcChainId: uint64,
    srcAddress: uint256,
    srcToken: text('srcToken'),
    dstChainId: uint64,
    dstAddress: uint256,
    dstToken: text('dstToken'),
    srcAmount: text('srcAmount'),
    dstAmount: text('dstAmount'),
    dstNativeAmount: text('dstNativeAmount'),
    requestor: text('requestor'),
    lpId: text('lpId'),
    expectedSingleStepTime: uint64,
    tolerantSingleStepTime: uint64,
    earliestRefundTime: uint64,
    agreementReachedTime: uint64,
    userSign: text('userSign'),
    lpSign: text('lpSign'),
  },
};
const nullable = (schema: object) => ({ oneOf: [schema, { type: 'null' }] });
const bytes32 = { type: 'string', pattern: '^0x[0-9a-f]{64}$' };
const complaintState = {
  bid_id: bytes32,
  status: {
    type: 'string',
    enum: COMPLAINT_STATUSES,
    description:
      'accepted → scheduled → signed → sent → confirmed (agent.confirmations blocks deep) | failed (reason); cancelling: the nonce is being freed by a 0-value self-transfer',
  },
  domain: { type: 'string', description: 'the complainant DID domain' },
  complainant: { type: 'string', description: 'the address the signature recovers (checksummed)' },
  tx_hash: nullable({ type: 'string' }),
  block_number: nullable({ type: 'integer' }),
  nonce: nullable({ type: 'integer' }),
  already_on_chain: {
    type: 'boolean',
    description: 'confirmed because the bid already had its complaint on chain (DuplicateBidId)',
  },
  reason: nullable({ type: 'string' }),
  paid_failures: {
    type: 'integer',
    minimum: 0,
    description:
      "the complainant DID domain's complaint transactions for this bid that were mined and failed (gas paid); at agent.maxPaidFailures a failed complaint is not sent again (409/41019)",
  },
  transactions: {
    type: 'array',
    description: 'every transaction signed at the nonce, oldest first (speed-ups, the freeing self-transfer)',
    items: {
      type: 'object',
      required: ['kind', 'tx_hash'],
      properties: { kind: { type: 'string', enum: ['call', 'cancel'] }, tx_hash: { type: 'string' } },
    },
  },
  created_at: { type: 'string' },
  updated_at: { type: 'string' },
};
const complaintAnswer = (message: object) => ({
  type: 'object',
  required: ['code', 'message', ...Object.keys(complaintState)],
  properties: { code: { const: 0 }, message, ...complaintState },
});
const limited = refusal('too many requests from this client', 'RATE_LIMITED');

export function agentOpenApiDocument() {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Otmoic Agent: complaint intake and on-chain submission',
      version: '1',
      description: `Success answers carry code 0 (the SDK checks code == 0); every refusal is JSON {code, message} with a matching HTTP status. Every route is rate-limited per client (valid API key, else IP; agent.rateLimit); POST /submit-complaint also per DID domain (agent.domainRateLimit, counted once the signer is known to own the domain). POST /submit-complaint spends the Agent wallet's gas: it needs the x-api-key header when agent.apiKeys is set, and a client IP in agent.allowIps when that is set (both empty by default: open).\n\n| code | HTTP | meaning |\n|---|---|---|\n${errorTable}`,
    },
    paths: {
      '/submit-complaint': {
        post: {
          summary:
            'a signed complaint, submitted on chain once (submitComplaint from the Agent wallet); the same complaint again answers its current status; a failed complaint from another complainant for the bid is replaced',
          parameters: [
            {
              name: 'x-api-key',
              in: 'header',
              required: false,
              description: 'one of agent.apiKeys; needed only when agent.apiKeys is set',
              schema: { type: 'string' },
            },
          ],
          requestBody: {
            required: true,
            ...json({
              type: 'object',
              required: ['params'],
              properties: {
                params: {
                  type: 'array',
                  minItems: 3,
                  maxItems: 3,
                  prefixItems: [
                    complaint,
                    { type: 'string', pattern: '^0x[0-9a-fA-F]{130}$', description: '65-byte signature' },
                    {
                      type: 'string',
                      minLength: 1,
                      maxLength: 255,
                      description:
                        'the complainant DID domain: at most 255 UTF-8 bytes, no control characters',
                    },
                  ],
                },
              },
            }),
          },
          responses: {
            '200': {
              description:
                'accepted (stored and queued), or this complaint already accepted: its current status',
              ...json(complaintAnswer({ type: 'string', enum: Object.values(ACCEPT_MESSAGES) })),
            },
            '400': refusal(
              'invalid body, complaint member, signature or domain',
              'INVALID_BODY',
              'INVALID_COMPLAINT',
              'INVALID_SIGNATURE',
              'INVALID_DOMAIN',
            ),
            '401': refusal('no valid API key in x-api-key (agent.apiKeys is set)', 'UNAUTHORIZED'),
            '403': refusal(
              'the signer does not own the DID domain, the complainant is not a party of the swap, or the client IP is not in agent.allowIps',
              'NOT_DOMAIN_OWNER',
              'NOT_A_PARTY',
              'FORBIDDEN',
            ),
            '409': refusal(
              'the bid already has a complaint, or its failed complaint failed on chain agent.maxPaidFailures times for this DID domain',
              'COMPLAINT_EXISTS',
              'COMPLAINT_FAILED_ON_CHAIN',
            ),
            '413': refusal('body too large', 'BODY_TOO_LARGE'),
            '415': refusal('not application/json', 'UNSUPPORTED_MEDIA_TYPE'),
            '429': refusal(
              'too many requests (client IP or DID domain)',
              'RATE_LIMITED',
              'DOMAIN_RATE_LIMITED',
            ),
            '503': refusal(
              'DID owner, chain or store unavailable; nothing was accepted',
              'DID_UNAVAILABLE',
              'CHAIN_UNAVAILABLE',
              'STORE_UNAVAILABLE',
            ),
          },
        },
      },
      '/complaint-status': {
        get: {
          summary: 'a complaint accepted here: accepted → … → confirmed (tx hash, block) or failed (reason)',
          parameters: [
            {
              name: 'bid',
              in: 'query',
              required: true,
              schema: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' },
            },
          ],
          responses: {
            '200': { description: 'the complaint', ...json(complaintAnswer({ const: 'ok' })) },
            '400': refusal('bid is not 32 bytes of 0x-hex', 'INVALID_QUERY'),
            '404': refusal('no complaint for this bid', 'COMPLAINT_NOT_FOUND'),
            '429': limited,
            '503': refusal('the store is unavailable', 'STORE_UNAVAILABLE'),
          },
        },
      },
      '/status': {
        get: {
          summary: 'wallet, chain id, contract, DID source, sender state (RPC URLs never shown)',
          responses: {
            '200': {
              description: 'state',
              ...json({
                type: 'object',
                required: [
                  'code',
                  'message',
                  'wallet',
                  'chainId',
                  'contract',
                  'didSource',
                  'agreementChains',
                  'submitter',
                ],
                properties: {
                  code: { const: 0 },
                  message: { const: 'ok' },
                  wallet: { type: 'string' },
                  chainId: { type: 'integer' },
                  contract: { type: 'string' },
                  didSource: { type: 'string', enum: ['didSupport', 'contract'] },
                  agreementChains: {
                    type: 'array',
                    items: { type: 'string' },
                    description:
                      "system chain ids ([[chainClients]]) whose swaps' complaints must prove their agreement (userSign, lpSign) before gas; empty: none is checked",
                  },
                  rpcEndpoints: { type: 'integer' },
                  submitter: {
                    type: 'object',
                    properties: {
                      chainOk: { type: 'boolean' },
                      active: { type: 'boolean' },
                      lastError: { type: 'string' },
                      balanceWei: { type: 'string' },
                      oldestUnconfirmedSinceMs: { type: 'integer' },
                    },
                  },
                },
              }),
            },
            '429': limited,
          },
        },
      },
      '/openapi.json': {
        get: {
          summary: 'this document',
          responses: { '200': { description: 'OpenAPI 3.1', ...json({ type: 'object' }) }, '429': limited },
        },
      },
      '/health': {
        get: {
          summary: 'database check (200 ok, 503 unavailable)',
          responses: {
            '200': { description: 'ok', ...json({ type: 'object' }) },
            '503': { description: 'the database is unavailable', ...json({ type: 'object' }) },
          },
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics',
          responses: {
            '200': { description: 'metrics', content: { 'text/plain': { schema: { type: 'string' } } } },
          },
        },
      },
    },
  };
}
