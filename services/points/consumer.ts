/**
 * The bus shell of Points' projections: decodes each message at the boundary (a malformed one is a
 * PoisonMessageError → dead-letter topic), asks projection.ts what it does, and applies that exactly once
 * (applyOnce: the event id and the rows in one transaction with the offset commit).
 */
import { applyOnce } from '../../shared/bus/apply-once.js';
import type { BusMessage, EventBus, HandlerContext, Subscription } from '../../shared/bus/port.js';
import type { Pool } from '../../shared/db/pool.js';
import { chainEvents } from '../../topics/chain.events.js';
import { decode } from '../../topics/envelope.js';
import { swapVerdicts } from '../../topics/swap.verdicts.js';
import { violations } from '../../topics/violations.js';
import {
  chainEventEffects,
  changedSubjects,
  verdictEffects,
  violationEffects,
  type Effect,
} from './projection.js';
import type { PointsStore } from './store.js';

export const POINTS_GROUP = 'points';
export const POINTS_TOPICS = [violations.name, swapVerdicts.name, chainEvents.name] as const;

export type ApplyOutcome = 'applied' | 'duplicate' | 'ignored';

/** The event id and effects of one message, or a PoisonMessageError for one that can never be handled. */
export function effectsOfMessage(message: BusMessage): { id: string; effects: Effect[] } {
  switch (message.topic) {
    case violations.name: {
      const { id, payload } = decode(violations, message);
      return { id, effects: violationEffects(id, payload) };
    }
    case swapVerdicts.name: {
      const { id, payload } = decode(swapVerdicts, message);
      return { id, effects: verdictEffects(id, payload) };
    }
    case chainEvents.name: {
      const { id, payload } = decode(chainEvents, message);
      return { id, effects: chainEventEffects(id, payload) };
    }
    default:
      throw new Error(`points does not consume topic ${message.topic}`);
  }
}

export function pointsHandler(options: {
  pool: Pool;
  store: PointsStore;
  /** applyOnce's consumer name: the group, so a replay's fresh group applies everything again. */
  consumer: string;
  onOutcome?: (topic: string, outcome: ApplyOutcome) => void;
  /** After commit: the subjects whose facts changed (the in-process score cache forgets them). */
  onChanged?: (subjects: string[]) => void;
}) {
  return async (message: BusMessage, context: HandlerContext): Promise<void> => {
    const { id, effects } = effectsOfMessage(message);
    // Chain events other than complaints change nothing: no transaction, the bus commits the offset.
    if (effects.length === 0) {
      options.onOutcome?.(message.topic, 'ignored');
      return;
    }
    const fresh = await applyOnce(options.pool, options.consumer, id, context, (tx) =>
      options.store.apply(tx, effects),
    );
    if (fresh) options.onChanged?.(changedSubjects(effects));
    options.onOutcome?.(message.topic, fresh ? 'applied' : 'duplicate');
  };
}

export function subscribePoints(options: {
  bus: EventBus;
  pool: Pool;
  store: PointsStore;
  group?: string;
  onOutcome?: (topic: string, outcome: ApplyOutcome) => void;
  onChanged?: (subjects: string[]) => void;
}): Promise<Subscription> {
  const group = options.group ?? POINTS_GROUP;
  const handler = pointsHandler({
    pool: options.pool,
    store: options.store,
    consumer: group,
    onOutcome: options.onOutcome,
    onChanged: options.onChanged,
  });
  return options.bus.subscribe({
    group,
    topics: POINTS_TOPICS,
    handler,
    startFrom: 'earliest',
  });
}
