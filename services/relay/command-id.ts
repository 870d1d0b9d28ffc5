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
 */
export function commandIdOf(command: Omit<RelayCommand, 'commandId'>, chainId: number): string {
  const canonical = [
    'relay-command/v2',
    command.action,
    command.systemChainId,
    String(chainId),
    command.transferId.toLowerCase(),
    command.transactionType,
  ];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}
