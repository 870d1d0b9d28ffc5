import { describe, expect, it } from 'vitest';
import { relayVectors } from '../../test/fixtures/otmoic-relay-vectors.js';
import { openApiDocument } from './openapi.js';
import { openApiValidator } from '../../test/support/openapi-validator.js';

/**
 * The served OpenAPI document against the golden vectors of the original relay (what the Otmoic SDK and LP
 * nodes send): every request the relay accepts is a valid body of its route in the document, and the answers
 * it gives are valid answers there. A client generated from the document must be able to send them.
 */
const doc = openApiDocument('9006');
const prefix = '/evm-client-9006/relay';
const ajv = openApiValidator();

type Operation = {
  requestBody: { content: { 'application/json': { schema: object } } };
  responses: Record<string, { content?: { 'application/json': { schema: object } } }>;
};
const operation = (route: string): Operation =>
  (doc.paths as unknown as Record<string, { post: Operation }>)[`${prefix}${route}`]!.post;
const bodyValidator = (route: string) =>
  ajv.compile(operation(route).requestBody.content['application/json'].schema);
const answerValidator = (route: string, status: string) =>
  ajv.compile(operation(route).responses[status]!.content!['application/json'].schema);

/**
 * The original answered "0x0" with code 200 for a value or signature it could not use, and hashed a JSON number
 * in a string member like ""; ours refuses all three with a 4xx (routes.test.ts).
 */
const refusedByUs = (v: { note: string; response: { address: string } }) =>
  v.response.address === '0x0' || v.note.startsWith('ethers-v5 quirk');
const acceptedVariants = () => relayVectors.eip712.variants.filter((v) => !refusedByUs(v));

const signerRequests = [
  ...relayVectors.eip712.cases.flatMap((c) => [
    c.request,
    { signature: c.compact_eip2098_signature, value: c.request.value },
    { signature: c.signature_with_v_0_or_1, value: c.request.value },
  ]),
  ...acceptedVariants().map((v) => v.request),
];

describe('relay OpenAPI document against the golden vectors', () => {
  it('documents every signer request of the vectors as a valid body, and its answer', () => {
    const body = bodyValidator('/get_signer_from_eip712');
    const answer = answerValidator('/get_signer_from_eip712', '200');
    for (const request of signerRequests) expect(body(request), ajv.errorsText(body.errors)).toBe(true);
    for (const c of relayVectors.eip712.cases) {
      for (const address of [
        c.response_when_server_CHAIN_ID_is_this.address,
        c.response_for_compact_signature.address,
      ])
        expect(answer({ code: 200, address }), ajv.errorsText(answer.errors)).toBe(true);
    }
  });

  it('does not document as valid the vectors the route refuses', () => {
    const body = bodyValidator('/get_signer_from_eip712');
    const refused = relayVectors.eip712.variants.filter(refusedByUs);
    expect(refused.map((v) => v.note.split(' ')[0])).toEqual(['missing', 'garbage', 'ethers-v5']);
    for (const v of refused) expect(body(v.request), v.note).toBe(false);
  });

  it('asks the single-chain route for its 13 members only, and the cross-chain route for all 15', () => {
    const single = relayVectors.eip712.single_swap.request;
    const singleBody = bodyValidator('/single_swap/get_signer_from_eip712');
    expect(singleBody(single), ajv.errorsText(singleBody.errors)).toBe(true);
    // The cross-chain route refuses this body (30203, routes.test.ts): the document says why.
    const swapBody = bodyValidator('/get_signer_from_eip712');
    expect(swapBody(single)).toBe(false);
    expect(ajv.errorsText(swapBody.errors)).toMatch(/tolerant_single_step_time/);
    expect(ajv.errorsText(swapBody.errors)).toMatch(/earliest_refund_time/);
  });

  it('refuses in the document what the route refuses: a 66-byte signature, a float, a hex uint', () => {
    const body = bodyValidator('/get_signer_from_eip712');
    const { signature, value } = relayVectors.eip712.cases[0]!.request;
    expect(body({ signature: `${signature}00`, value })).toBe(false);
    expect(body({ signature, value: { ...value, src_chain_id: 9006.5 } })).toBe(false);
    expect(body({ signature, value: { ...value, agreement_reached_time: '0x3c' } })).toBe(false);
  });

  it('documents every behalf command and hashlock request of the vectors that the relay accepts', () => {
    for (const vector of relayVectors.calldata) {
      // Vectors the original answered with an error keep their request; ours may refuse those with a 4xx.
      if ('http_status' in vector) continue;
      const route = (vector as unknown as { route: string }).route.replace(
        /^POST \/evm-client-\{system_chain_id\}\/relay/,
        '',
      );
      const body = bodyValidator(route);
      expect(body(vector.request), `${vector.name}: ${ajv.errorsText(body.errors)}`).toBe(true);
    }
    // And not what the command parser refuses (each one 30201, naming the field).
    const accepted = relayVectors.calldata.find((v) => v.name === 'confirm_out ERC20')!.request;
    const command = accepted['command_transfer_out_confirm'] as Record<string, unknown>;
    const confirmOut = bodyValidator('/behalf/confirm_out');
    for (const broken of [
      { token: 'not-an-address' },
      { user_receiver_address: `0x${'1'.repeat(41)}` },
      { token_amount: '1.5' },
      { eth_amount: -1 },
      { agreement_reached_time: '0x3c' },
      { hash_lock: '0x1234' },
      { uuid: 'u'.repeat(201) },
    ]) {
      const body = { ...accepted, command_transfer_out_confirm: { ...command, ...broken } };
      expect(confirmOut(body), JSON.stringify(broken)).toBe(false);
    }
    const hashlock = bodyValidator('/get_hashlock');
    const answer = answerValidator('/get_hashlock', '200');
    for (const vector of relayVectors.hashlock.filter((v) => v.response.code === 200)) {
      expect(hashlock(vector.request), ajv.errorsText(hashlock.errors)).toBe(true);
      expect(answer({ code: 200, hashlock: vector.response.hashlock })).toBe(true);
    }
  });

  it('documents 429 on exactly the routes that are rate-limited', () => {
    const unlimited = [
      '/get_hashlock',
      '/get_system_fee',
      '/get_signer_from_eip712',
      '/single_swap/get_signer_from_eip712',
    ];
    for (const route of unlimited)
      expect([route, '429' in operation(route).responses]).toEqual([route, false]);
    for (const route of ['/behalf/confirm_out', '/behalf/refund_in', '/register_relay'])
      expect([route, '429' in operation(route).responses]).toEqual([route, true]);
  });
});
