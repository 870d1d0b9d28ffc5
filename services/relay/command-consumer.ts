/**
 * Consumes relay.commands: each command of this deployment becomes due for the submitter, exactly once
 * (applyOnce on the envelope id, which is the command id), then the submitter is woken.
 */
import { applyOnce } from '../../shared/bus/apply-once.js';
import type { EventBus, Subscription } from '../../shared/bus/port.js';
import type { Pool } from '../../shared/db/pool.js';
import { decode } from '../../topics/envelope.js';
import { relayCommands } from '../../topics/relay.commands.js';
import type { CommandStore } from './store.js';

export function relayConsumerGroup(systemChainId: string): string {
  return `relay-submitter-${systemChainId}`;
}

export async function subscribeCommands(options: {
  bus: EventBus;
  pool: Pool;
  store: CommandStore;
  systemChainId: string;
  onScheduled: () => void;
}): Promise<Subscription> {
  const group = relayConsumerGroup(options.systemChainId);
  return options.bus.subscribe({
    group,
    topics: [relayCommands.name],
    handler: async (message, context) => {
      const { id, payload } = decode(relayCommands, message);
      // Commands of other deployments sharing the bus are theirs to send.
      const mine = payload.systemChainId === options.systemChainId;
      await applyOnce(options.pool, group, id, context, async (tx) => {
        if (mine) await options.store.schedule(tx, payload);
      });
      if (mine) options.onScheduled();
    },
  });
}
