/**
 * Consumes relay.commands: each command of this deployment becomes due for the submitter, exactly once
 * (applyOnce on the envelope id, which is the command id), then the submitter is woken.
 */
import { applyOnce } from '../../shared/bus/apply-once.js';
import type { EventBus, Subscription } from '../../shared/bus/port.js';
import type { Pool } from '../../shared/db/pool.js';
import { decode } from '../../topics/envelope.js';
import { relayCommands } from '../../topics/relay.commands.js';
import type { CommandStore, RelayDeployment } from './store.js';

/**
 * One group per deployment (systemChainId, EVM chain, contract), not per systemChainId: relays of two contracts
 * under one systemChainId on one bus (each with its own database) would otherwise split the group's
 * partitions, and a command consumed by the other deployment's member (which leaves it alone) stayed
 * `accepted` in its own database for ever. Each group reads every command and keeps its own.
 */
export function relayConsumerGroup(deployment: RelayDeployment): string {
  const { systemChainId, chainId, contractAddr } = deployment;
  return `relay-submitter-${systemChainId}-${chainId}-${contractAddr.toLowerCase()}`;
}

export async function subscribeCommands(options: {
  bus: EventBus;
  pool: Pool;
  store: CommandStore;
  deployment: RelayDeployment;
  onScheduled: () => void;
}): Promise<Subscription> {
  const group = relayConsumerGroup(options.deployment);
  const { systemChainId } = options.deployment;
  return options.bus.subscribe({
    group,
    topics: [relayCommands.name],
    handler: async (message, context) => {
      const { id, payload } = decode(relayCommands, message);
      // Commands of other deployments sharing the bus are theirs to send.
      const mine = payload.systemChainId === systemChainId;
      await applyOnce(options.pool, group, id, context, async (tx) => {
        if (mine) await options.store.schedule(tx, payload);
      });
      if (mine) options.onScheduled();
    },
  });
}
