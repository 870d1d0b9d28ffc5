// The demo's complaint step, as a party's SDK would do it: the complainant signs the "Otmoic Reputation"
// EIP-712 Complaint and sends it to the Agent (`POST /submit-complaint` {params: [complaint, signature,
// domain]}), which pays the gas. Without an Agent route (404) the complaint is filed on chain directly.
import { complaintDomain, complaintTypedDataTypes } from '../chain/index.js';
import { registerDids } from '../devnet/agreements.js';
import { fileComplaint, type ComplaintFields } from '../devnet/complaints.js';
import type { DevnetChain } from '../devnet/devnet.js';

export interface ComplaintRoute {
  /** The Agent's base URL, or undefined to file on chain. */
  agentUrl?: string;
}

export type ComplaintPath = 'agent' | 'chain';

export async function complain(
  chain: DevnetChain,
  fields: ComplaintFields,
  options: { complainant: number; domain: string },
  route: ComplaintRoute,
): Promise<ComplaintPath> {
  if (route.agentUrl) {
    // The complainant owns its DID before it complains (the registry is the devnet's; the SDK's user has one).
    await registerDids(chain, { [options.domain]: chain.accounts[options.complainant]!.address });
    const signature = await chain
      .wallet(options.complainant)
      .signTypedData(
        complaintDomain(chain.chainId, chain.contracts.reputation),
        complaintTypedDataTypes(),
        fields,
      );
    const complaint = {
      ...fields,
      srcAddress: fields.srcAddress.toString(),
      dstAddress: fields.dstAddress.toString(),
    };
    const response = await fetch(`${route.agentUrl}/submit-complaint`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ params: [complaint, signature, options.domain] }),
    });
    if (response.status !== 404) {
      const answer = (await response.json()) as { code?: number; message?: string };
      if (!response.ok || answer.code !== 0)
        throw new Error(`the Agent refused the complaint: ${answer.code} ${answer.message ?? ''}`);
      return 'agent';
    }
  }
  await fileComplaint(chain, fields, { ...options, payer: 0 });
  return 'chain';
}
