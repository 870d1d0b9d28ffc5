/**
 * The idempotency key of a behalf command, so the same command sent twice (a client retry, a relay server
 * resending, another gas strategy) is one command with one id and at most one effective transaction.
 */
import { createHash } from 'node:crypto';
import type { RelayCommand } from '../../topics/relay.commands.js';

/**
 * One command per (action, transferId) of a deployment: the transferId already hashes every term of the
 * lock (sender, receiver, token, amounts, hashlock, times, EVM chain, direction), and a confirm's preimage is
 * fixed by the hashlock. The gas strategy is not part of it: a repeat with another strategy updates the
 * pending command instead of making a second one (which could send a second transaction).
 *
 * v3 adds the contract: the transferId does not hash it, so one lock's terms on two contracts of a chain gave
 * one id. Commands stored under older ids (v1, v2) are found by (deployment, action, transferId), never by
 * this id alone (CommandStore.find): a retry after an upgrade answers the stored command.
 */
export function commandIdOf(
  command: Omit<RelayCommand, 'commandId'>,
  deployment: { chainId: number; contractAddr: string },
): string {
  const canonical = [
    'relay-command/v3',
    command.action,
    command.systemChainId,
    String(deployment.chainId),
    deployment.contractAddr.toLowerCase(),
    command.transferId.toLowerCase(),
    command.transactionType,
  ];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}
