import type { HealthCheckResult } from '../runtime/http.js';
import type { SenderState } from './sender.js';

/**
 * GET /health's `sender` check of the relay and the Agent: `degraded` while the sender holding the wallet
 * cannot use its chain (the RPC does not answer, or reports another chain id): nothing is sent meanwhile,
 * and only /status said so. A standby sender (another process holds the wallet) is fine.
 */
export function senderHealth(state: SenderState | undefined, unbound?: string): HealthCheckResult {
  if (state === undefined) return { status: 'degraded', error: unbound ?? 'no sender yet' };
  if (!state.active) return { status: 'ok', standby: true };
  if (state.chainOk) return { status: 'ok' };
  return {
    status: 'degraded',
    error: `the chain cannot be used, nothing is sent: ${state.lastError ?? 'no answer yet'}`,
  };
}
