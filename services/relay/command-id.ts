/**
 * The idempotency key of a behalf command: a hash of its canonical content, so the same command sent twice
 * (a client retry, a relay server resending) is one command with one id and at most one transaction.
 */
import { createHash } from 'node:crypto';
import type { RelayCommand } from '../../topics/relay.commands.js';

/**
 * Hashes everything that decides the transaction: action, deployment (system and EVM chain id), every
 * contract argument (already normalised: checksummed addresses, canonical decimals, lowercase hex), the
 * transaction type and the gas strategy. Client-side labels (uuid, bid, append_information) are not part of
 * it: they do not change what is sent.
 */
export function commandIdOf(command: Omit<RelayCommand, 'commandId'>, chainId: number): string {
  const c = command.call;
  const canonical = [
    'relay-command/v1',
    command.action,
    command.systemChainId,
    String(chainId),
    c.sender,
    c.receiver,
    c.token,
    c.tokenAmount,
    c.ethAmount,
    c.hashlock,
    String(c.expectedSingleStepTime),
    String(c.tolerantSingleStepTime),
    String(c.earliestRefundTime),
    String(c.agreementReachedTime),
    c.preimage ?? '',
    command.transactionType,
    command.gasPrice,
  ];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}
