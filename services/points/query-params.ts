/**
 * The query parameters of the Points routes, parsed with zod at the boundary. Unknown parameters are refused
 * (a typo such as `adress=` must not silently answer about nobody); a repeated parameter is refused too.
 */
import { z } from 'zod';
import { PointsError } from './errors.js';

const MAX_UNIX_SECONDS = 253_402_300_799; // 9999-12-31: anything later is a mistake, not a query

/** `at`: unix seconds, as a decimal string in the query. */
const at = z
  .string()
  .regex(/^\d{1,12}$/, 'must be unix seconds (a decimal integer)')
  .transform(Number)
  .refine((n) => n <= MAX_UNIX_SECONDS, 'is too far in the future')
  .optional();

const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 20-byte 0x-prefixed hex address')
  .transform((s) => s.toLowerCase());
/** A DID name as the DID support service spells them; the OpenAPI document states the same pattern. */
export const DID_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,252}$/;
const did = z.string().regex(DID_NAME_PATTERN, 'must be a DID name such as alice.example');
/**
 * LP ids are the LPs' own strings, from the chain: any text the ranking can list (spaces, any script) is
 * looked up, up to a sensible length. U+0000 never is: Points keeps it as the six characters `\u0000`.
 */
export const LP_ID_PATTERN = /^[^\u0000]{1,1000}$/u;
const lpId = z
  .string()
  .regex(LP_ID_PATTERN, 'must be 1 to 1000 characters without U+0000 (written \\u0000 in stored ids)');
const limit = z
  .string()
  .regex(/^\d{1,3}$/, 'must be an integer from 1 to 100')
  .transform(Number)
  .refine((n) => n >= 1 && n <= 100, 'must be an integer from 1 to 100')
  .optional();
const cursor = z
  .string()
  .max(200)
  .transform((s, ctx) => {
    const decoded = decodeCursor(s);
    if (!decoded) {
      ctx.addIssue({ code: 'custom', message: 'is not a cursor this service returned' });
      return z.NEVER;
    }
    return decoded;
  })
  .optional();

const userSubject = z
  .strictObject({ address: address.optional(), did: did.optional(), at })
  .refine((q) => (q.address === undefined) !== (q.did === undefined), {
    error: 'give exactly one of address and did',
    path: ['address'],
  });

export const userPointQuery = userSubject;
/** The dashboard's score history: one subject, a user by address or an LP by id. */
export const scoreHistoryQuery = z
  .strictObject({ address: address.optional(), lp_id: lpId.optional() })
  .refine((q) => (q.address === undefined) !== (q.lp_id === undefined), {
    error: 'give exactly one of address and lp_id',
    path: ['address'],
  });
export const lpPointQuery = z.strictObject({ lp_id: lpId, at });
export const userRecordsQuery = z.strictObject({ address, at, limit, cursor });
export const lpRecordsQuery = z.strictObject({ lp_id: lpId, at, limit, cursor });
export const complaintQuery = z.strictObject({
  bid: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, 'must be 32 bytes of 0x-prefixed hex')
    .transform((s) => s.toLowerCase()),
  at,
});
const rankingLimit = z
  .string()
  .regex(/^\d{1,4}$/, 'must be an integer from 1 to 1000')
  .transform(Number)
  .refine((n) => n >= 1 && n <= 1_000, 'must be an integer from 1 to 1000')
  .optional();
export const lpRankingQuery = z.strictObject({ at, limit: rankingLimit });

/** Parses `query` or throws a 400 naming each bad parameter. */
export function parseQuery<T>(schema: z.ZodType<T>, query: unknown): T {
  const parsed = schema.safeParse(query ?? {});
  if (parsed.success) return parsed.data;
  const given = (query ?? {}) as Record<string, unknown>;
  const problems = parsed.error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') return `unknown parameter ${issue.keys.join(', ')}`;
    const name = issue.path.join('.') || 'query';
    const value = issue.path.length === 1 ? given[String(issue.path[0])] : null;
    return `${name}: ${issue.code === 'invalid_type' ? wrongType(value, issue.message) : issue.message}`;
  });
  throw new PointsError('INVALID_QUERY', problems.join('; '));
}

/** A parameter of the wrong type: zod leaves the input out of its issues, so what was given says which. */
function wrongType(value: unknown, otherwise: string): string {
  if (value === undefined) return 'is required';
  if (Array.isArray(value)) return 'is given more than once';
  return otherwise;
}

/** Opaque paging cursor: the last record's block time and bid. */
export function encodeCursor(position: { blockTime: number; bidId: string }): string {
  return Buffer.from(`${position.blockTime}:${position.bidId}`, 'utf8').toString('base64url');
}

export function decodeCursor(text: string): { blockTime: number; bidId: string } | null {
  const match = /^(\d{1,12}):(0x[0-9a-f]{64})$/.exec(Buffer.from(text, 'base64url').toString('utf8'));
  return match ? { blockTime: Number(match[1]), bidId: match[2]! } : null;
}
