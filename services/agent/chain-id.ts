/**
 * The EVM chain id of `agent.rpc` (the EIP-712 domain and transaction signing need it): `agent.chainId`
 * when configured, else asked at start (eth_chainId, each URL in order; the caller retries). Errors never
 * name a URL. `stop` (the service stops) ends a read in flight at once.
 */
import { z } from 'zod';
import { outboundSignal } from '../../shared/runtime/deadline.js';

const answer = z.object({ result: z.string().regex(/^0x[0-9a-fA-F]+$/) });

export async function resolveChainId(
  configured: number | undefined,
  urls: readonly string[],
  timeoutMs: number,
  stop?: AbortSignal,
): Promise<number> {
  if (configured !== undefined) return configured;
  const problems: string[] = [];
  for (const [index, url] of urls.entries()) {
    const name = index === 0 ? 'agent.rpc' : `agent.rpcFallbacks[${index - 1}]`;
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
        signal: outboundSignal(timeoutMs, stop),
      });
      const parsed = answer.safeParse(await response.json());
      if (parsed.success) return Number(BigInt(parsed.data.result));
      problems.push(`${name}: unexpected eth_chainId answer`);
    } catch (error) {
      if (stop?.aborted) throw error;
      problems.push(`${name}: ${(error as Error).name}`);
    }
  }
  throw new Error(
    `the chain id of the Agent's RPC could not be read (${problems.join('; ')}); set agent.chainId to start without it`,
  );
}
