import { Wallet } from 'ethers';
import { describe, expect, it } from 'vitest';
import { AGENT_ERRORS } from './errors.js';
import { agentOpenApiDocument } from './openapi.js';
import { sampleComplaint, sdkBody } from './test-harness.js';
import { openApiValidator } from '../../test/support/openapi-validator.js';

/**
 * The served OpenAPI document against the body the Otmoic SDK sends (ethers signTypedData over the Complaint,
 * then `{params: [complaint, signature, domain]}`): a client generated from the document must be able to send
 * it, and the document must not promise what the route refuses.
 */
const ajv = openApiValidator();
const doc = agentOpenApiDocument() as unknown as {
  paths: Record<string, { post: { requestBody: { content: { 'application/json': { schema: object } } } } }>;
};
const body = ajv.compile(doc.paths['/submit-complaint']!.post.requestBody.content['application/json'].schema);
const signer = new Wallet('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');
const chain = { chainId: 97, reputation: '0x5FbDB2315678afecb367f032d93F642f64180aa3' };

describe('Agent OpenAPI document against the SDK body', () => {
  it('documents the SDK body as valid, with uint64 members as numbers or decimal strings', async () => {
    const sdk = await sdkBody(signer, sampleComplaint(), 'alice.devnet', chain);
    expect(body(sdk), ajv.errorsText(body.errors)).toBe(true);
    const [complaint, signature, domain] = sdk.params;
    const asStrings = {
      ...complaint,
      srcChainId: String(complaint.srcChainId),
      agreementReachedTime: String(complaint.agreementReachedTime),
    };
    expect(body({ params: [asStrings, signature, domain] }), ajv.errorsText(body.errors)).toBe(true);
  });

  it('does not document as valid what the route refuses', async () => {
    const [complaint, signature, domain] = (await sdkBody(signer, sampleComplaint(), 'alice.devnet', chain))
      .params;
    const { lpSign: _dropped, ...missingMember } = complaint;
    for (const params of [
      [missingMember, signature, domain],
      [{ ...complaint, srcChainId: 1.5 }, signature, domain],
      [{ ...complaint, srcAddress: '0x' + '1'.repeat(65) }, signature, domain],
      [{ ...complaint, srcAddress: 1234 }, signature, domain],
      [complaint, signature.slice(0, -2), domain],
      [complaint, signature, ''],
      [complaint, signature],
    ])
      expect(body({ params }), JSON.stringify(params).slice(0, 120)).toBe(false);
  });

  it('documents the access refusals of POST /submit-complaint (agent.apiKeys, agent.allowIps)', () => {
    const responses = (
      agentOpenApiDocument().paths['/submit-complaint'].post as unknown as {
        responses: Record<
          string,
          { content: { 'application/json': { schema: { properties: { code: { enum: number[] } } } } } }
        >;
      }
    ).responses;
    const codesOf = (status: string) =>
      responses[status]!.content['application/json'].schema.properties.code.enum;
    expect(codesOf('401')).toEqual([AGENT_ERRORS.UNAUTHORIZED.code]);
    expect(codesOf('403')).toContain(AGENT_ERRORS.FORBIDDEN.code);
  });
});
