// A late LP rescued by the relay: the user confirmed out (the preimage is public), the LP did not confirm in by
// T+3E+Tol, so the relay server posts `POST …/relay/behalf/confirm_in` with the original body and the relay
// confirms the LP's TransferIn in its third-party window T+3E+Tol … T+3E+2Tol. The swap completes for the user;
// the LP is still case 6 (a ConfirmIn by the relay does not count as the LP's).
import type { DevnetChain } from '../devnet/devnet.js';
import type { LockedSwap } from '../devnet/swap-scenarios.js';

export interface RelayRoute {
  /** `http://host:port/evm-client-{id}/relay` of the relay serving `chain` (the swap's destination). */
  url: string;
}

/** The original relay server's confirm_in body for the LP's TransferIn of `swap`. */
export function confirmInBody(swap: LockedSwap) {
  const side = swap.in;
  return {
    transaction_type: 'LOCAL_PADDING',
    gas: { gas_price: 'STANDARD' },
    command_transfer_confirm: {
      sender: side.sender,
      user_receiver_address: side.receiver,
      token: side.token,
      token_amount: side.tokenAmount.toString(),
      eth_amount: side.ethAmount.toString(),
      hash_lock: side.hashlock,
      agreement_reached_time: side.agreementReachedTime,
      expected_single_step_time: side.expectedSingleStepTime,
      tolerant_single_step_time: side.tolerantSingleStepTime,
      earliest_refund_time: side.earliestRefundTime,
      preimage: swap.preimage,
      transfer_id: side.transferId,
      bid: swap.bidId,
    },
  };
}

/**
 * Posts the behalf command, moves `chain` into the relay's window and mines a block a second (automine makes
 * blocks only for transactions: the relay waits for confirmations) until the command is confirmed.
 */
export async function rescueByRelay(
  swap: LockedSwap,
  chain: DevnetChain,
  relay: RelayRoute,
  timeoutMs = 60_000,
): Promise<{ commandId: string; txHash: string }> {
  const response = await fetch(`${relay.url}/behalf/confirm_in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(confirmInBody(swap)),
  });
  const accepted = (await response.json()) as { code: number; message: string; command_id?: string };
  if (accepted.code !== 200 || !accepted.command_id)
    throw new Error(`the relay refused confirm_in: ${accepted.code} ${accepted.message}`);
  const { T, E, Tol } = swap.times;
  if ((await chain.latestTimestamp()) < T + 3 * E + Tol + 1)
    await chain.setNextBlockTimestamp(T + 3 * E + Tol + 1);
  await chain.mine(1);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const answer = await fetch(`${relay.url}/behalf/commands/${accepted.command_id}`);
    const { command } = (await answer.json()) as {
      command?: { status: string; tx_hash?: string; reason?: string };
    };
    if (command?.status === 'confirmed')
      return { commandId: accepted.command_id, txHash: command.tx_hash ?? '' };
    if (command?.status === 'failed') throw new Error(`relay command failed: ${command.reason ?? ''}`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await chain.mine(1);
  }
  throw new Error(`relay command ${accepted.command_id} not confirmed within ${timeoutMs} ms`);
}
