/** The OpenAPI 3.1 document of the relay routes, served at `…/relay/openapi.json`. Hand-written: it is small. */
import { RELAY_ERRORS } from './errors.js';
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
  description: '0x-hex address (up to 20 bytes, left-padded) or a decimal uint256 string',
};
const amount = { type: 'string', pattern: '^[0-9]+$', description: 'decimal integer (base units)' };
const seconds = {
  oneOf: [
    { type: 'integer', minimum: 0 },
    { type: 'string', pattern: '^[0-9]+$' },
  ],
  description: 'unix seconds / seconds',
};
const bytes32 = { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' };

const commandFields = {
  sender: address,
  user_receiver_address: address,
  token: { ...address, description: 'token address; "0" or the zero address = native coin' },
  token_amount: amount,
  eth_amount: amount,
  hash_lock: bytes32,
  agreement_reached_time: seconds,
  expected_single_step_time: seconds,
  tolerant_single_step_time: seconds,
  earliest_refund_time: seconds,
  uuid: { type: 'string' },
  transfer_id: { type: 'string' },
  bid: { type: 'string' },
  append_information: {
    type: 'string',
    description: 'JSON text {"user_account_id": …}; stored, not interpreted',
  },
  sender_wallet_name: {
    type: 'string',
    description: 'confirm_in / refund_in: name in relay.senderWallets, instead of sender',
  },
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
  transaction_type: { type: 'string', enum: ['LOCAL_PADDING'] },
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
const errors = {
  '400': { description: 'invalid input (see the code)', ...json(errorBody) },
  '404': { description: 'unknown route or command', ...json(errorBody) },
  '413': { description: 'body too large', ...json(errorBody) },
  '415': { description: 'not application/json', ...json(errorBody) },
  '502': { description: 'the chain could not be read', ...json(errorBody) },
  '503': { description: 'the command store is unavailable', ...json(errorBody) },
};
const accepted = {
  '200': {
    description: 'stored and queued (the same command again gets the same answer and id)',
    ...json({
      type: 'object',
      properties: {
        code: { const: 200 },
        message: { const: 'Command received' },
        command_id: { type: 'string' },
      },
    }),
  },
  ...errors,
};

const swapValue = {
  type: 'object',
  description:
    'OtmoicSwap Message: uint256 members as JSON integers or decimal strings, string members as strings',
  required: [
    'src_chain_id',
    'src_address',
    'src_token',
    'src_amount',
    'dst_chain_id',
    'dst_address',
    'dst_token',
    'dst_amount',
    'dst_native_amount',
    'requestor',
    'lp_id',
    'agreement_reached_time',
    'expected_single_step_time',
    'tolerant_single_step_time',
    'earliest_refund_time',
  ],
};
const signerBody = {
  type: 'object',
  required: ['signature', 'value'],
  properties: {
    signature: { type: 'string', description: '65-byte (v 27/28/0/1) or 64-byte EIP-2098 0x-hex' },
    value: swapValue,
  },
};
const signerOk = {
  '200': {
    description: 'recovered signer',
    ...json({ type: 'object', properties: { code: { const: 200 }, address: { type: 'string' } } }),
  },
  ...errors,
};

export function openApiDocument(systemChainId: string) {
  const p = `/evm-client-${systemChainId}/relay`;
  return {
    openapi: '3.1.0',
    info: {
      title: `Otmoic relay interface (system chain ${systemChainId})`,
      version: '1',
      description: `Errors are always JSON {code, message} with a matching HTTP status:\n\n| code | HTTP | meaning |\n|---|---|---|\n${errorTable}`,
    },
    paths: {
      [`${p}/get_hashlock`]: {
        post: {
          summary: 'keccak256 of the 32 preimage bytes',
          requestBody: json({ type: 'object', required: ['preimage'], properties: { preimage: bytes32 } }),
          responses: {
            '200': {
              description: 'lowercase hashlock',
              ...json({ type: 'object', properties: { code: { const: 200 }, hashlock: bytes32 } }),
            },
            ...errors,
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
            ...errors,
          },
        },
      },
      [`${p}/get_signer_from_eip712`]: {
        post: {
          summary: 'signer of a 15-member OtmoicSwap Message',
          requestBody: json(signerBody),
          responses: signerOk,
        },
      },
      [`${p}/single_swap/get_signer_from_eip712`]: {
        post: {
          summary: 'signer of the 13-member single-chain Message (no tolerant / earliest refund time)',
          requestBody: json(signerBody),
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
          summary:
            'status of a command: accepted, scheduled, signed, sent, confirmed (tx_hash) or failed (reason)',
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
          responses: { '200': { description: 'the command', ...json({ type: 'object' }) }, ...errors },
        },
      },
      [`${p}/status`]: {
        get: {
          summary: 'chain reachability and submitter state',
          responses: { '200': { description: 'state', ...json({ type: 'object' }) } },
        },
      },
    },
  };
}
