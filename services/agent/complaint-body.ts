/**
 * The SDK's body of POST /submit-complaint: `{"params":[complaint, signature, complainantDomain]}`
 * (spec/otmoic.md §5), validated member by member. The complainant is recovered from the EIP-712 signature
 * under the "Otmoic Reputation" domain of the Agent's chain and contract.
 */
import { z } from 'zod';
import {
  bidId,
  complaintSchema,
  isChainInputError,
  recoverComplainant,
  withCanonicalV,
  type Complaint,
} from '../../shared/chain/index.js';
import { AgentError } from './errors.js';

const bodySchema = z.object({
  params: z.array(z.unknown()).length(3, 'params must hold exactly [complaint, signature, domain]'),
});

/** secp256k1n / 2: the contract (like OpenZeppelin's ECDSA) refuses a larger s as a malleable twin. */
const HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;
// Printable, no control characters: the domain is logged and shown; 255 UTF-8 bytes bound the gas of the call.
// No lone surrogate (\p{Cs}): it has no UTF-8 form, so neither the DID lookup nor the call could carry it.
const DOMAIN = /^[^\p{Cc}\p{Cs}]{1,255}$/u;
const DOMAIN_MAX_BYTES = 255;

/**
 * Longest value of each string member, in UTF-8 bytes (for ASCII, characters). The contract takes any length
 * and the Agent's wallet pays for every byte (calldata, the event, the bid hash): unbounded, one DID owner could
 * make each complaint cost about 6x the gas of a real one (854k against 135k at a 21 KB body). Counted in
 * characters, 4-byte ones at the bounds cost 292k instead of under 200k. The bounds hold the values of any
 * real swap with room to spare: token and account addresses of any chain, uint256 amounts in base 10, an LP id
 * as Points takes it, signatures in hex or base58.
 */
export const COMPLAINT_MEMBER_MAX_LENGTH = {
  srcToken: 128,
  dstToken: 128,
  srcAmount: 100,
  dstAmount: 100,
  dstNativeAmount: 100,
  requestor: 128,
  lpId: 200,
  userSign: 256,
  lpSign: 256,
} as const satisfies Partial<Record<keyof Complaint, number>>;

/** String members holding U+0000, which the complaint store (jsonb) cannot hold. */
function withNul(complaint: Complaint): string[] {
  return Object.entries(complaint).flatMap(([member, value]) =>
    typeof value === 'string' && value.includes('\u0000')
      ? [`complaint.${member} must not hold U+0000 (the complaint store cannot keep it)`]
      : [],
  );
}

function tooLong(complaint: Complaint): string[] {
  return Object.entries(COMPLAINT_MEMBER_MAX_LENGTH).flatMap(([member, max]) => {
    // Bytes, not characters: the gas is paid per byte. The body limit bounds the string this counts.
    const bytes = Buffer.byteLength(complaint[member as keyof Complaint] as string, 'utf8');
    return bytes > max ? [`complaint.${member} must be at most ${max} UTF-8 bytes (got ${bytes})`] : [];
  });
}

export interface ParsedComplaint {
  complaint: Complaint;
  /** Every member as a JSON string (uint members in base 10): what is stored and published. */
  stored: Record<string, string>;
  signature: string;
  domain: string;
  bidId: string;
  /** Checksummed address the signature recovers. */
  signer: string;
}

export function parseComplaintBody(
  body: unknown,
  domain712: { chainId: number; contractAddr: string },
): ParsedComplaint {
  const envelope = bodySchema.safeParse(body);
  if (!envelope.success) {
    throw new AgentError(
      'INVALID_BODY',
      `the body must be {"params":[complaint, signature, domain]}: ${envelope.error.issues.map((i) => `${i.path.map(String).join('.') || 'body'} ${i.message}`).join('; ')}`,
    );
  }
  const [rawComplaint, rawSignature, rawDomain] = envelope.data.params;

  const parsed = complaintSchema.safeParse(rawComplaint);
  if (!parsed.success) {
    const members = parsed.error.issues.map((issue) =>
      issue.path.length === 0
        ? `complaint ${issue.message}`
        : `complaint.${issue.path.map(String).join('.')} ${issue.message}`,
    );
    throw new AgentError('INVALID_COMPLAINT', members.join('; ').slice(0, 2_000));
  }
  const complaint = parsed.data;
  const long = [...tooLong(complaint), ...withNul(complaint)];
  if (long.length > 0) throw new AgentError('INVALID_COMPLAINT', long.join('; '));

  if (typeof rawSignature !== 'string' || !SIGNATURE.test(rawSignature))
    throw new AgentError('INVALID_SIGNATURE', 'signature (params[1]) must be 65 bytes of 0x-prefixed hex');
  const v = Number.parseInt(rawSignature.slice(130, 132), 16);
  if (![0, 1, 27, 28].includes(v))
    throw new AgentError('INVALID_SIGNATURE', `signature v must be 27, 28, 0 or 1, got ${v}`);
  if (BigInt(`0x${rawSignature.slice(66, 130)}`) > HALF_N)
    throw new AgentError(
      'INVALID_SIGNATURE',
      'signature s is in the upper half of the curve order (malleable)',
    );
  const signature = withCanonicalV(rawSignature);

  if (
    typeof rawDomain !== 'string' ||
    !DOMAIN.test(rawDomain) ||
    Buffer.byteLength(rawDomain, 'utf8') > DOMAIN_MAX_BYTES
  )
    throw new AgentError(
      'INVALID_DOMAIN',
      'domain (params[2]) must be a DID domain: 1 to 255 characters and at most 255 UTF-8 bytes of valid UTF-16, no control characters',
    );

  let signer: string;
  try {
    signer = recoverComplainant(complaint, signature, domain712.chainId, domain712.contractAddr);
  } catch (error) {
    if (isChainInputError(error)) throw new AgentError('INVALID_SIGNATURE', error.message);
    throw error;
  }
  const stored = Object.fromEntries(
    Object.entries(complaint).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString(10) : v]),
  );
  return { complaint, stored, signature, domain: rawDomain, bidId: bidId(complaint), signer };
}
