/**
 * The agreement a complaint carries, read as the Classifier judges it (DESIGN §7) and as the Agent checks it
 * before paying gas: one reading, so that the Agent refuses exactly the complaints the Classifier would find
 * invalid for what they carry. Its signatures are checked by the caller (shared/otmoic/consent.ts).
 */
import { agreementOfComplaint, AgreementFieldError, type SignedAgreement } from './agreement.js';

export type ComplaintAgreement =
  /** Readable, on two chains the deployment watches: its signatures can be checked. */
  | { kind: 'read'; agreement: SignedAgreement; srcEvmChainId: number; dstEvmChainId: number }
  /** It names a chain the deployment does not watch: nothing can be said against it (unknown, not case 0). */
  | { kind: 'unwatched'; agreement: SignedAgreement | null; reason: string }
  /** A member cannot be read (case 0). */
  | { kind: 'invalid'; reason: string };

/**
 * `evmChainIdOf` maps a system chain id (base 10) to the EVM chain id of its OtmoicSwap domain, undefined for a
 * chain not watched (`[[chainClients]]`). `read` may remember its answers (the Classifier's does, per event).
 */
export function readComplaintAgreement(
  fields: Readonly<Record<string, string>>,
  evmChainIdOf: (chainId: string) => number | undefined,
  read: (fields: Readonly<Record<string, string>>) => SignedAgreement = agreementOfComplaint,
): ComplaintAgreement {
  let agreement: SignedAgreement;
  try {
    agreement = read(fields);
  } catch (err) {
    if (!(err instanceof AgreementFieldError)) throw err;
    // A chain this deployment does not watch may be a non-EVM one (Solana's 32-byte addresses): its address or
    // token is no EVM address, which says nothing against the complaint. Unknown, not case 0; on either side.
    const unwatched = (side: 'src' | 'dst') => {
      const raw = fields[`${side}ChainId`];
      const chain = typeof raw === 'string' && /^\d{1,20}$/.test(raw) ? BigInt(raw).toString() : undefined;
      return (err.field === `${side}Address` || err.field === `${side}Token`) &&
        chain !== undefined &&
        evmChainIdOf(chain) === undefined
        ? chain
        : undefined;
    };
    const notWatched = unwatched('src') ?? unwatched('dst');
    if (notWatched !== undefined)
      return {
        kind: 'unwatched',
        agreement: null,
        reason: `the complaint's chain ${notWatched} is not watched by this deployment`,
      };
    return { kind: 'invalid', reason: `the complaint's ${err.message}` };
  }
  const src = agreement.srcChainId.toString();
  const dst = agreement.dstChainId.toString();
  const srcEvmChainId = evmChainIdOf(src);
  const dstEvmChainId = evmChainIdOf(dst);
  if (srcEvmChainId === undefined || dstEvmChainId === undefined)
    return {
      kind: 'unwatched',
      agreement,
      reason: `the complaint's chain ${srcEvmChainId === undefined ? src : dst} is not watched by this deployment`,
    };
  return { kind: 'read', agreement, srcEvmChainId, dstEvmChainId };
}
