/**
 * Does the complainant's key own the DID domain it names? Asked before any gas is spent (the contract asks
 * again when the call is made). Production asks the DID support service (`GET /find/owner/{address}` →
 * `{code:0, data:[{name}]}` or, as DESIGN §5 gives it, `{data:[{name}]}`, the real SDK's route; checksummed, then lower-case: shared/otmoic/did-lookup.ts); the devnet asks the reputation contract's own registry
 * (`ownerOfDomain`), which only our devnet contract has.
 */
import { Contract, getAddress, ZeroAddress } from 'ethers';
import {
  didNamesInclude,
  didNamesUnderAnyForm,
  namesOfFindOwnerAnswer,
} from '../../shared/otmoic/did-lookup.js';
import { outboundSignal } from '../../shared/runtime/deadline.js';
import type { RpcPool } from '../../shared/sender/index.js';

export type Ownership = { owns: true } | { owns: false; detail: string };

export interface DidOwnership {
  readonly source: 'didSupport' | 'contract';
  /** Throws when the source cannot be read (the caller answers 503 and stores nothing). */
  check(domain: string, signer: string): Promise<Ownership>;
  /**
   * The first of `candidates` (lower-case addresses, in order) that owns `domain`, or null: the LP's key among
   * the signers an lpSign may recover to. Throws as check does.
   */
  firstOwner(domain: string, candidates: Iterable<string>): Promise<string | null>;
}

/** firstOwner by asking about each candidate in turn: a genuine signature's signer is among the first. */
async function firstOwnerByCheck(
  ownership: Pick<DidOwnership, 'check'>,
  domain: string,
  candidates: Iterable<string>,
): Promise<string | null> {
  for (const candidate of candidates) if ((await ownership.check(domain, candidate)).owns) return candidate;
  return null;
}

/** `stop` (ServiceContext.stopSignal): a lookup in flight ends when the process stops, not at its timeout. */
export function didSupportOwnership(baseUrl: string, timeoutMs = 5_000, stop?: AbortSignal): DidOwnership {
  const base = baseUrl.replace(/\/+$/, '');
  const ownership: DidOwnership = {
    source: 'didSupport',
    async check(domain, signer) {
      const names = await didNamesUnderAnyForm(signer, async (form) => {
        const response = await fetch(`${base}/find/owner/${form}`, {
          signal: outboundSignal(timeoutMs, stop),
        });
        if (!response.ok) throw new Error(`DID support answered HTTP ${response.status}`);
        // As the Classifier reads it: `{data}` with no code (DESIGN §5) is an answer, a code other than 0 a failure.
        return namesOfFindOwnerAnswer(await response.json());
      });
      if (didNamesInclude(names, domain)) return { owns: true };
      return {
        owns: false,
        detail:
          names.length === 0
            ? 'it owns no DID domain'
            : `it owns ${names.slice(0, 5).join(', ')}${names.length > 5 ? ', …' : ''}`,
      };
    },
    firstOwner: (domain, candidates) => firstOwnerByCheck(ownership, domain, candidates),
  };
  return ownership;
}

export function contractOwnership(rpc: RpcPool, registry: string): DidOwnership {
  const abi = ['function ownerOfDomain(string domain) view returns (address)'];
  const ownerOf = async (domain: string) =>
    (await rpc.read((p) =>
      new Contract(registry, abi, p).getFunction('ownerOfDomain').staticCall(domain),
    )) as string;
  return {
    source: 'contract',
    async firstOwner(domain, candidates) {
      // One read, whatever the number of candidates.
      const owner = (await ownerOf(domain)).toLowerCase();
      if (owner === ZeroAddress) return null;
      for (const candidate of candidates) if (candidate === owner) return candidate;
      return null;
    },
    async check(domain, signer) {
      const owner = await ownerOf(domain);
      if (owner === ZeroAddress) return { owns: false, detail: 'the domain is not registered' };
      if (getAddress(owner) === getAddress(signer)) return { owns: true };
      return { owns: false, detail: `the domain is owned by ${getAddress(owner)}` };
    },
  };
}
