// The demo's complaint step, as a party's SDK would do it: the complainant signs the "Otmoic Reputation"
// EIP-712 Complaint and sends it to the Agent (`POST /submit-complaint` {params: [complaint, signature,
// domain]}), which pays the gas; the demo then waits until the Agent reports it confirmed on chain. Without an
// Agent route (404: a build before the Agent's intake) the complaint is filed on chain directly.
import { complaintDomain, complaintTypedDataTypes } from '../chain/index.js';
import { registerDids } from '../devnet/agreements.js';
import { fileComplaint, type ComplaintFields } from '../devnet/complaints.js';
import type { DevnetChain } from '../devnet/devnet.js';

export interface ComplaintRoute {
  /** The Agent's base URL, or undefined to file on chain. */
  agentUrl?: string;
}

export type ComplaintPath = 'agent' | 'chain';

const AGENT_TIMEOUT_MS = 60_000;

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
    const body = JSON.stringify({ params: [complaint, signature, options.domain] });
    const deadline = Date.now() + AGENT_TIMEOUT_MS;
    for (;;) {
      const response = await fetch(`${route.agentUrl}/submit-complaint`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      if (response.status === 404) break; // no intake route: file on chain below
      const answer = (await response.json()) as { code?: number; message?: string; bid_id?: string };
      // 503: the Agent has not read its chain yet (just started); anything else is final.
      if (response.status === 503 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        continue;
      }
      if (!response.ok || answer.code !== 0 || !answer.bid_id)
        throw new Error(`the Agent refused the complaint: ${answer.code} ${answer.message ?? ''}`);
      await confirmedByAgent(route.agentUrl, answer.bid_id, chain, deadline);
      return 'agent';
    }
  }
  await fileComplaint(chain, fields, { ...options, payer: 0 });
  return 'chain';
}

/** Waits for the Agent's submission to be confirmed, mining a block now and then (automine waits for txs). */
async function confirmedByAgent(agentUrl: string, bidId: string, chain: DevnetChain, deadline: number) {
  while (Date.now() < deadline) {
    const response = await fetch(`${agentUrl}/complaint-status?bid=${bidId}`);
    const status = (await response.json()) as { status?: string; reason?: string };
    if (status.status === 'confirmed') return;
    if (status.status === 'failed') throw new Error(`the Agent's complaint failed: ${status.reason ?? ''}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await chain.mine(1);
  }
  throw new Error(`the Agent's complaint ${bidId} was not confirmed in time`);
}
