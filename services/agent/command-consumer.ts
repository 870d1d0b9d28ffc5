/**
 * Consumes complaint.commands: each accepted complaint becomes due for the submitter exactly once
 * (applyOnce on the envelope id, which is the bid id), then the submitter is woken.
 */
import { applyOnce } from '../../shared/bus/apply-once.js';
import type { EventBus, Subscription } from '../../shared/bus/port.js';
import type { Pool } from '../../shared/db/pool.js';
import { complaintCommands, type ComplaintCommand } from '../../topics/complaint.commands.js';
import { decode } from '../../topics/envelope.js';
import type { ComplaintStore } from './store.js';

export const AGENT_CONSUMER_GROUP = 'agent-submitter';

export async function subscribeComplaints(options: {
  bus: EventBus;
  pool: Pool;
  store: ComplaintStore;
  /** The complainant of a message (recovered again: the message carries the signed complaint). */
  signerOf: (payload: ComplaintCommand) => string;
  onScheduled: () => void;
}): Promise<Subscription> {
  return options.bus.subscribe({
    group: AGENT_CONSUMER_GROUP,
    topics: [complaintCommands.name],
    handler: async (message, context) => {
      const { id, payload } = decode(complaintCommands, message);
      const signer = options.signerOf(payload);
      await applyOnce(options.pool, AGENT_CONSUMER_GROUP, id, context, async (tx) => {
        await options.store.schedule(tx, { ...payload, signer });
      });
      options.onScheduled();
    },
  });
}
