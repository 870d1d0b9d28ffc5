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
  type Complaint,
} from '../../shared/chain/index.js';
import { AgentError } from './errors.js';

const bodySchema = z.object({
  params: z.array(z.unknown()).length(3, 'params must hold exactly [complaint, signature, domain]'),
});

/** secp256k1n / 2: the contract (like OpenZeppelin's ECDSA) refuses a larger s as a malleable twin. */
const HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;
// Printable, no control characters: the domain is logged and shown; 255 bounds the gas of the call.
const DOMAIN = /^[^\p{Cc}]{1,255}$/u;

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
  const signature = rawSignature.toLowerCase();

  if (typeof rawDomain !== 'string' || !DOMAIN.test(rawDomain))
    throw new AgentError(
      'INVALID_DOMAIN',
      'domain (params[2]) must be a DID domain: 1 to 255 characters, no control characters',
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
