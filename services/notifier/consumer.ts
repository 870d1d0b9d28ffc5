// Decided violations and complaint outcomes → outbox rows, in the transaction that commits the offset.
import type { EventBus, Subscription } from '../../shared/bus/port.js';
import type { Pool } from '../../shared/db/pool.js';
import { decode } from '../../topics/envelope.js';
import { swapVerdicts, violations } from '../../topics/index.js';
import { enqueue, type Notification } from './outbox.js';

export const NOTIFIER_GROUP = 'notifier';
export const NOTIFIER_TOPICS = [violations.name, swapVerdicts.name] as const;

export function subscribeNotifier(options: {
  bus: EventBus;
  pool: Pool;
  onQueued: () => void;
}): Promise<Subscription> {
  return options.bus.subscribe({
    group: NOTIFIER_GROUP,
    topics: NOTIFIER_TOPICS,
    handler: async (message, context) => {
      let notification: Notification | undefined;
      if (message.topic === violations.name) {
        const { payload: v } = decode(violations, message);
        notification = {
          id: `violation:${v.bidId}`,
          kind: 'violation',
          payload: {
            case: v.case,
            party: v.party,
            subject: v.subject,
            bidId: v.bidId,
            chainId: v.chainId,
            blockTime: v.blockTime,
            rule: v.rule,
            transactions: v.transactions,
          },
        };
      } else {
        const { payload: v } = decode(swapVerdicts, message);
        if (v.complaint)
          notification = {
            id: `complaint:${v.bidId}`,
            kind: 'complaint_outcome',
            payload: {
              bidId: v.bidId,
              outcome: v.outcome,
              case: v.case,
              party: v.party,
              subject: v.subject,
              complainant: v.complaint.complainant,
              complaintValid: v.complaint.valid,
              invalidReason: v.complaint.invalidReason,
              rule: v.rule,
            },
          };
      }
      const client = await options.pool.connect();
      try {
        await client.query('BEGIN');
        if (notification) await enqueue(client, notification);
        await context.commitIn(client);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
      if (notification) options.onQueued();
    },
  });
}
