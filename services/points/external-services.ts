/**
 * The two outside services Points reads, with every answer parsed by zod (a malformed answer counts as the
 * service failing):
 *
 * A 4xx answer (but 408 and 429, which are about the service's state) is about the key asked, not the service,
 * and throws KeyRefusedError: the service is not marked down for everyone (cached-lookup.ts).
 *
 * - KYC, at `point.relayAdminUrl` (our contract; devnet stand-in in services/stand-ins/relay-admin):
 *   `GET /kyc/{address}` (lower-case 0x address) → 200 `{"data":{"address":"0x…","verified":true|false}}`,
 *   for any address (an unknown one is simply not verified).
 * - DID names, at `point.didSupportUrl` (the real SDK's route, and our extension):
 *   `GET /find/owner/{address}` → `{"data":[{"name":"alice.example"}]}`, or with `"code":0` (another code is the
 *   service failing; asked checksummed, then lower-case:
 *   shared/otmoic/did-lookup.ts);
 *   `GET /find/name/{name}` → `{"data":[{"owner":"0x…"}]}` (empty `data`: no such name).
 */
import { z } from 'zod';
import { didNamesUnderAnyForm } from '../../shared/otmoic/did-lookup.js';
import { address as addressSchema } from '../../shared/schema/primitives.js';
import { KeyRefusedError } from './cached-lookup.js';

export const kycAnswer = z.object({
  data: z.object({ address: addressSchema, verified: z.boolean() }),
});
// A `code` other than 0 is the service saying it failed, whatever `data` holds (often []): a malformed answer, so
// the service counts as down (last known value, stale) and never as "owns no DID" (shared/otmoic/did-lookup.ts).
const didCode = z.literal(0).optional();
export const didNamesAnswer = z.object({
  code: didCode,
  data: z.array(z.object({ name: z.string().min(1) })),
});
export const didOwnersAnswer = z.object({ code: didCode, data: z.array(z.object({ owner: addressSchema })) });

async function getJson<T>(url: string, schema: z.ZodType<T>, signal: AbortSignal): Promise<T> {
  const response = await fetch(url, { signal, headers: { accept: 'application/json' } });
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined); // frees the connection for the next request
    const { status } = response;
    if (status >= 400 && status < 500 && status !== 408 && status !== 429)
      throw new KeyRefusedError(`GET ${url}: HTTP ${status}`, status);
    throw new Error(`GET ${url}: HTTP ${status}`);
  }
  const parsed = schema.safeParse(await response.json());
  if (!parsed.success) throw new Error(`GET ${url}: unexpected answer: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

const join = (base: string, path: string) => `${base.replace(/\/+$/, '')}${path}`;

export function fetchKyc(relayAdminUrl: string) {
  return async (address: string, signal: AbortSignal): Promise<boolean> => {
    const answer = await getJson(
      join(relayAdminUrl, `/kyc/${encodeURIComponent(address)}`),
      kycAnswer,
      signal,
    );
    if (answer.data.address.toLowerCase() !== address.toLowerCase()) {
      throw new Error(`KYC answer is about ${answer.data.address}, not ${address}`);
    }
    return answer.data.verified;
  };
}

export function fetchDidNames(didSupportUrl: string) {
  return async (address: string, signal: AbortSignal): Promise<string[]> => [
    ...(await didNamesUnderAnyForm(address, async (form) => {
      const answer = await getJson(
        join(didSupportUrl, `/find/owner/${encodeURIComponent(form)}`),
        didNamesAnswer,
        signal,
      );
      return answer.data.map((d) => d.name);
    })),
  ];
}

/**
 * The owner address (lower-case) of a DID name, or null when the name has none. A name the service refuses
 * (4xx) has no owner it knows: fastify-based services answer 404 for a path parameter over 100 characters,
 * and our names may have up to 253 (query-params.ts).
 */
export function fetchDidOwner(didSupportUrl: string) {
  return async (name: string, signal: AbortSignal): Promise<string | null> => {
    try {
      const answer = await getJson(
        join(didSupportUrl, `/find/name/${encodeURIComponent(name)}`),
        didOwnersAnswer,
        signal,
      );
      return answer.data[0]?.owner.toLowerCase() ?? null;
    } catch (error) {
      if (error instanceof KeyRefusedError) return null;
      throw error;
    }
  };
}
