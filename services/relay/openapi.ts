/** The OpenAPI 3.1 document of the relay routes, served at `…/relay/openapi.json`. Hand-written: it is small. */
import {
  SWAP_PRIMARY_TYPE,
  swapTypedDataTypes,
  type SwapVariant,
} from '../../shared/chain/otmoic-swap-eip712.js';
import { RELAY_ERRORS } from './errors.js';
import { MAX_CALLBACK_URL_LENGTH } from '../../shared/otmoic/support-register.js';
import { GAS_LEVELS } from './gas-price.js';

const errorBody = {
  type: 'object',
  required: ['code', 'message'],
  properties: {
    code: { type: 'integer', enum: Object.values(RELAY_ERRORS).map((e) => e.code) },
    message: { type: 'string' },
  },
};

const errorTable = Object.values(RELAY_ERRORS)
  .map((e) => `| ${e.code} | ${e.status} | ${e.meaning} |`)
  .join('\n');

const address = {
  type: 'string',
  pattern: '^(0x[0-9a-fA-F]{1,40}|[0-9]{1,78})$',
  description:
    '0x-hex address (up to 20 bytes, left-padded; mixed case must be a valid EIP-55 checksum) or a decimal uint256 string below 2^160',
};
/**
 * An unsigned integer as the parsers take it: a JSON integer (exact, so at most 2^53-1) or a decimal string of
 * at most `digits` digits.
 */
const integerOrDecimal = (digits: number, description?: string) => ({
  oneOf: [
    { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    { type: 'string', pattern: `^[0-9]{1,${digits}}$` },
  ],
  ...(description === undefined ? {} : { description }),
});
const amount = integerOrDecimal(
  78,
  'decimal integer below 2^256 (base units); a JSON integer only up to 2^53-1',
);
const seconds = integerOrDecimal(16, 'unix seconds / seconds, at most 2^53-1');
/** An optional member that may be sent as null, meaning absent (Java clients write unset fields so). */
const orNull = <T extends { type: string }>(schema: T) => ({ ...schema, type: [schema.type, 'null'] });
const identifier = orNull({ type: 'string', maxLength: 200 });
const bytes32 = { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' };

const commandFields = {
  sender: orNull(address),
  user_receiver_address: address,
  token: { ...address, description: 'token address; "0" or the zero address = native coin' },
  token_amount: amount,
  eth_amount: amount,
  hash_lock: bytes32,
  agreement_reached_time: seconds,
  expected_single_step_time: seconds,
  tolerant_single_step_time: seconds,
  earliest_refund_time: seconds,
  uuid: identifier,
  transfer_id: identifier,
  bid: identifier,
  append_information: orNull({
    type: 'string',
    maxLength: 4096,
    description: 'JSON text {"user_account_id": …}; stored, not interpreted',
  }),
  sender_wallet_name: orNull({
    type: 'string',
    minLength: 1,
    maxLength: 200,
    description:
      'confirm_in / refund_in: name in relay.senderWallets, instead of sender; beside sender, an unknown name is ignored and a known one must name the same address',
  }),
};
const required = [
  'user_receiver_address',
  'token',
  'token_amount',
  'eth_amount',
  'hash_lock',
  'agreement_reached_time',
  'expected_single_step_time',
  'tolerant_single_step_time',
  'earliest_refund_time',
];
const confirmCommand = {
  type: 'object',
  required: [...required, 'preimage'],
  properties: { ...commandFields, preimage: bytes32 },
};
const refundCommand = { type: 'object', required, properties: commandFields };

const envelopeProps = {
  transaction_type: { type: 'string', enum: ['LOCAL_PADDING', 'CHAIN_PADDING', 'FASTEST'] },
  gas: {
    type: 'object',
    required: ['gas_price'],
    properties: {
      gas_price: { type: 'string', description: `${GAS_LEVELS.join(' | ')} or a decimal wei amount` },
    },
  },
};

const behalfBody = (keys: string[], command: object) => ({
  type: 'object',
  required: ['transaction_type', 'gas'],
  description: `the command under exactly one of: ${keys.join(', ')}`,
  properties: { ...envelopeProps, ...Object.fromEntries(keys.map((k) => [k, command])) },
});

const json = (schema: object) => ({ content: { 'application/json': { schema } } });
/** Answers any relay route may give (rate limit per client). */
const always = {
  '429': { description: 'too many requests from this client (30215)', ...json(errorBody) },
};
/** Answers of a route behind relay.apiKeys / relay.allowIps. */
const guarded = {
  '401': { description: 'no valid API key in x-api-key (30216)', ...json(errorBody) },
  '403': { description: 'client IP not in relay.allowIps (30217)', ...json(errorBody) },
};
/** Answers of a route that is not rate-limited (get_hashlock, get_system_fee, the get_signer routes). */
const unlimitedErrors = {
  '400': { description: 'invalid input (see the code)', ...json(errorBody) },
  '404': { description: 'unknown route or command', ...json(errorBody) },
  '413': { description: 'body too large', ...json(errorBody) },
  '415': { description: 'not application/json', ...json(errorBody) },
  '502': { description: 'the chain could not be read', ...json(errorBody) },
  '503': { description: 'the command store or the chain is unavailable', ...json(errorBody) },
};
const errors = { ...unlimitedErrors, ...always };
const commandStatus = {
  type: 'string',
  enum: ['accepted', 'scheduled', 'signed', 'sent', 'cancelling', 'confirmed', 'failed'],
  description:
    'accepted → scheduled → signed → sent → confirmed (N blocks deep) | failed; cancelling: the nonce is being freed by a 0-value self-transfer',
};
const accepted = {
  '200': {
    description:
      'stored and queued, or the one command of this (action, transferId) already known: a repeat never changes its gas strategy (the first accepted one stays), a failed one whose window is open is re-opened (unless it already failed on chain relay.maxPaidFailures times: 409)',
    ...json({
      type: 'object',
      required: ['code', 'message', 'command_id', 'status'],
      properties: {
        code: { const: 200 },
        message: { const: 'Command received' },
        command_id: { type: 'string', pattern: '^[0-9a-f]{64}$' },
        status: commandStatus,
      },
    }),
  },
  '409': {
    description:
      'window closed (30218), transfer not pending on chain (30220), or a failed command whose transactions were mined and failed relay.maxPaidFailures times (30224)',
    ...json(errorBody),
  },
  ...errors,
  ...guarded,
};
const nullable = (schema: object) => ({ oneOf: [schema, { type: 'null' }] });
const fee = {
  type: 'object',
  description: 'type 2: maxFeePerGas / maxPriorityFeePerGas; type 0: gasPrice (decimal wei)',
  properties: {
    type: { type: 'integer', enum: [0, 2] },
    maxFeePerGas: { type: 'string' },
    maxPriorityFeePerGas: { type: 'string' },
    gasPrice: { type: 'string' },
  },
};
const command = {
  type: 'object',
  required: ['id', 'action', 'status', 'transfer_id', 'window', 'transactions', 'paid_failures'],
  properties: {
    id: { type: 'string' },
    action: { type: 'string', enum: ['confirm_out', 'confirm_in', 'refund_out', 'refund_in'] },
    status: commandStatus,
    transfer_id: bytes32,
    window: {
      type: 'object',
      properties: {
        op: { type: 'string' },
        start: { type: 'integer' },
        end: nullable({ type: 'integer' }),
      },
    },
    tx_hash: nullable({ type: 'string' }),
    nonce: nullable({ type: 'integer' }),
    block_number: nullable({ type: 'integer' }),
    reason: nullable({ type: 'string' }),
    attempts: { type: 'integer' },
    paid_failures: {
      type: 'integer',
      minimum: 0,
      description:
        'transactions of the command mined and failed, each paid by the relay wallet; at relay.maxPaidFailures a re-post is refused (30224)',
    },
    transactions: {
      type: 'array',
      description:
        'every transaction signed at the nonce, oldest first (speed-ups, the freeing self-transfer)',
      items: {
        type: 'object',
        properties: {
          kind: { type: 'string', enum: ['call', 'cancel'] },
          tx_hash: { type: 'string' },
          fee,
          gas_limit: { type: 'string' },
        },
      },
    },
    gas_price: { type: 'string' },
    client: { type: 'object' },
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
  },
};
const reads = (restrictable: boolean) => (restrictable ? { ...always, ...guarded } : always);

/** A uint256 member of the signed Message (the parser takes decimal strings of up to 100 digits). */
const uint256Member = integerOrDecimal(100);
/** The signed Message of a variant, member by member from the same type list the signature is checked with. */
const swapValue = (variant: SwapVariant) => {
  const members = swapTypedDataTypes(variant)[SWAP_PRIMARY_TYPE]!;
  return {
    type: 'object',
    description:
      'OtmoicSwap Message: uint256 members as JSON integers or decimal strings (below 2^256), string members as strings; other keys are ignored',
    required: members.map((m) => m.name),
    properties: Object.fromEntries(
      members.map((m) => [m.name, m.type === 'uint256' ? uint256Member : { type: 'string' }]),
    ),
  };
};
const signerBody = (variant: SwapVariant) => ({
  type: 'object',
  required: ['signature', 'value'],
  properties: {
    signature: {
      type: 'string',
      pattern: '^0x([0-9a-fA-F]{128}|[0-9a-fA-F]{130})$',
      description: '65-byte (v 27/28/0/1) or 64-byte EIP-2098 0x-hex',
    },
    value: swapValue(variant),
  },
});
const signerOk = {
  '200': {
    description: 'recovered signer',
    ...json({
      type: 'object',
      required: ['code', 'address'],
      properties: { code: { const: 200 }, address: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' } },
    }),
  },
  ...unlimitedErrors,
};

export function openApiDocument(systemChainId: string) {
  const p = `/evm-client-${systemChainId}/relay`;
  return {
    openapi: '3.1.0',
    info: {
      title: `Otmoic relay interface (system chain ${systemChainId})`,
      version: '1',
      description: `Errors are always JSON {code, message} with a matching HTTP status (with relay.errorsAsHttp200 = true, refusals answer HTTP 200 with the same body, for clients that throw on non-2xx). The behalf routes and register_relay need the x-api-key header when relay.apiKeys is set, and a client IP in relay.allowIps when that is set; with relay.restrictReads the reads (status, commands, /metrics) too. Every route but get_hashlock, the get_signer routes and get_system_fee is rate-limited per client (API key, else IP).\n\n| code | HTTP | meaning |\n|---|---|---|\n${errorTable}`,
    },
    paths: {
      [`${p}/get_hashlock`]: {
        post: {
          summary: 'keccak256 of the 32 preimage bytes',
          requestBody: json({
            type: 'object',
            required: ['preimage'],
            properties: {
              preimage: {
                description: '32 bytes: 0x-hex, or (as ethers 5 took them) a JSON array of 32 integers 0–255',
                oneOf: [
                  bytes32,
                  {
                    type: 'array',
                    items: { type: 'integer', minimum: 0, maximum: 255 },
                    minItems: 32,
                    maxItems: 32,
                  },
                ],
              },
            },
          }),
          responses: {
            '200': {
              description: 'lowercase hashlock',
              ...json({ type: 'object', properties: { code: { const: 200 }, hashlock: bytes32 } }),
            },
            ...unlimitedErrors,
          },
        },
      },
      [`${p}/get_system_fee`]: {
        post: {
          summary: "the contract's basisPointsRate() (30 = 0.30 %)",
          requestBody: json({ type: 'object' }),
          responses: {
            '200': {
              description: 'fee',
              ...json({ type: 'object', properties: { code: { const: 200 }, fee: { type: 'integer' } } }),
            },
            ...unlimitedErrors,
          },
        },
      },
      [`${p}/get_signer_from_eip712`]: {
        post: {
          summary: 'signer of a 15-member OtmoicSwap Message',
          requestBody: json(signerBody('swap')),
          responses: signerOk,
        },
      },
      [`${p}/single_swap/get_signer_from_eip712`]: {
        post: {
          summary: 'signer of the 13-member single-chain Message (no tolerant / earliest refund time)',
          requestBody: json(signerBody('single-chain')),
          responses: signerOk,
        },
      },
      [`${p}/behalf/confirm_out`]: {
        post: {
          summary: 'confirmTransferOut in the non-user window T+3E+2Tol…T+3E+3Tol',
          requestBody: json(
            behalfBody(['command_transfer_confirm', 'command_transfer_out_confirm'], confirmCommand),
          ),
          responses: accepted,
        },
      },
      [`${p}/behalf/confirm_in`]: {
        post: {
          summary: 'confirmTransferIn in the non-LP window T+3E+Tol…T+3E+2Tol',
          requestBody: json(
            behalfBody(['command_transfer_confirm', 'command_transfer_in_confirm'], confirmCommand),
          ),
          responses: accepted,
        },
      },
      [`${p}/behalf/refund_out`]: {
        post: {
          summary: 'refundTransferOut after R',
          requestBody: json(behalfBody(['command_transfer_refund'], refundCommand)),
          responses: accepted,
        },
      },
      [`${p}/behalf/refund_in`]: {
        post: {
          summary: 'refundTransferIn after R',
          requestBody: json(behalfBody(['command_transfer_refund'], refundCommand)),
          responses: accepted,
        },
      },
      [`${p}/behalf/commands/{id}`]: {
        get: {
          summary: 'one command: its status, window, transactions (tx_hash of the mined one), reason',
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
          responses: {
            '200': {
              description: 'the command',
              ...json({
                type: 'object',
                required: ['code', 'command'],
                properties: { code: { const: 200 }, command },
              }),
            },
            '404': { description: 'no command with this id (30210)', ...json(errorBody) },
            '503': { description: 'the command store is unavailable (30211)', ...json(errorBody) },
            ...reads(true),
          },
        },
      },
      [`${p}/behalf/commands`]: {
        get: {
          summary: 'the commands of one transfer (any action), newest first',
          parameters: [{ name: 'transfer_id', in: 'query', required: true, schema: bytes32 }],
          responses: {
            '200': {
              description: 'the commands',
              ...json({
                type: 'object',
                required: ['code', 'commands'],
                properties: { code: { const: 200 }, commands: { type: 'array', items: command } },
              }),
            },
            '400': { description: 'transfer_id is not 32 bytes of hex (30201)', ...json(errorBody) },
            '503': { description: 'the command store is unavailable (30211)', ...json(errorBody) },
            ...reads(true),
          },
        },
      },
      [`${p}/register_relay`]: {
        post: {
          summary:
            "the relay server's callback URLs (stored, the latest registration wins; handed to the chain client's /support/register when relay.chainClientRegisterUrl is set, which delivers the swap events to them)",
          requestBody: json({
            type: 'object',
            required: ['relay_server_url'],
            properties: {
              relay_server_url: {
                type: 'object',
                properties: Object.fromEntries(
                  [
                    'on_transfer_out',
                    'on_transfer_in',
                    'on_confirm_out',
                    'on_confirm_in',
                    'on_refunded_out',
                    'on_refunded_in',
                  ].map((name) => [
                    name,
                    // null: not given (a Java relay server's unset member)
                    { type: ['string', 'null'], format: 'uri', maxLength: MAX_CALLBACK_URL_LENGTH },
                  ]),
                ),
              },
            },
          }),
          responses: {
            '200': {
              description: 'registered',
              ...json({
                type: 'object',
                properties: { code: { const: 200 }, message: { const: 'register succeed' } },
              }),
            },
            ...errors,
            '502': {
              description:
                'the chain client did not take the callback URLs (30225); they are stored and handed to it again',
              ...json(errorBody),
            },
            ...guarded,
          },
        },
      },
      [`${p}/status`]: {
        get: {
          summary: 'chain reachability and sender state (RPC URLs never shown)',
          responses: { '200': { description: 'state', ...json({ type: 'object' }) }, ...reads(true) },
        },
      },
    },
  };
}
