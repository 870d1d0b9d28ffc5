/**
 * The bus shell of Points' projections: decodes each message at the boundary (a malformed one is a
 * PoisonMessageError → dead-letter topic), asks projection.ts what it does, and applies that exactly once
 * (applyOnceBatch: the event ids and the rows of a batch in one transaction with the position).
 */
import { applyOnceBatch, type ProcessedInMemory } from '../../shared/bus/apply-once.js';
import {
  valueOmitted,
  type BatchHandler,
  type BusMessage,
  type EventBus,
  type Subscription,
  type ValuesOnly,
} from '../../shared/bus/port.js';
import type { Pool } from '../../shared/db/pool.js';
import { CHAIN_EVENT_KIND_HEADER, chainEvents } from '../../topics/chain.events.js';
import { decode, decodeEnvelope, decodePayload } from '../../topics/envelope.js';
import { swapVerdicts } from '../../topics/swap.verdicts.js';
import { violations } from '../../topics/violations.js';
import {
  chainEventEffects,
  changedSubjects,
  verdictEffects,
  violationEffects,
  withoutNul,
  withStorableLpIds,
  type Effect,
} from './projection.js';
import type { PointsStore } from './store.js';

export const POINTS_GROUP = 'points';
export const POINTS_TOPICS = [violations.name, swapVerdicts.name, chainEvents.name] as const;

/**
 * Points uses only the complaints of chain.events: the other events are passed over on their kind header, and
 * the bus need not read their values (a replay of a year of events reads one in many).
 */
export const POINTS_VALUES_ONLY: ValuesOnly = {
  topic: chainEvents.name,
  header: CHAIN_EVENT_KIND_HEADER,
  values: ['Complaint'],
};

export type ApplyOutcome = 'applied' | 'duplicate' | 'ignored';

/** `\u0000`, or a surrogate's escape (`\ud800`…`\udfff`, either case): see withoutNul. */
const MAY_NEED_REWRITE = /\\u(0000|[dD][89abcdefABCDEF])/;

/**
 * The event id and effects of one message (null: a chain event passed over unread, it has none), or a
 * PoisonMessageError for one that can never be handled.
 */
export function effectsOfMessage(message: BusMessage): { id: string; effects: Effect[] } | null {
  const decoded = decodeEffects(message);
  // JSON spells U+0000 only as \u0000, and a lone surrogate only as an escape (a bus value is UTF-8 text): a
  // message without such text has neither, and skips the walk.
  if (decoded === null) return null;
  const effects = MAY_NEED_REWRITE.test(message.value) ? withoutNul(decoded.effects) : decoded.effects;
  return { id: decoded.id, effects: withStorableLpIds(effects) };
}

function decodeEffects(message: BusMessage): { id: string; effects: Effect[] } | null {
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
      // Points uses complaints only. Another event is passed over on its producer's `kind` header without
      // being parsed (a replay of a year of events uses one in many); without the header its envelope and kind
      // are checked. Its payload is the classifier's to validate (and dead-letter).
      if (valueOmitted(POINTS_VALUES_ONLY, message.topic, message.headers)) return null;
      const outer = decodeEnvelope(chainEvents, message);
      if ((outer.payload as { kind?: unknown } | null)?.kind !== 'Complaint')
        return { id: outer.id, effects: [] };
      const { id, payload } = decodePayload(chainEvents, outer);
      return { id, effects: chainEventEffects(id, payload) };
    }
    default:
      throw new Error(`points does not consume topic ${message.topic}`);
  }
}

export interface PointsHandlerOptions {
  pool: Pool;
  store: PointsStore;
  /** applyOnce's consumer name: the group, so a replay's fresh group applies everything again. */
  consumer: string;
  /** A rebuild's applied ids in memory instead of processed_events (see ProcessedInMemory). */
  processed?: ProcessedInMemory;
  onOutcome?: (topic: string, outcome: ApplyOutcome) => void;
  /** After commit: the subjects whose facts changed (the in-process score cache forgets them). */
  onChanged?: (subjects: string[]) => void;
}

/**
 * Batches of one partition: every message decoded first (one that does not decode fails the batch, which
 * the bus then delivers message by message: that one is dead-lettered alone), then the rows of the messages
 * not applied before written in one transaction with the position (applyOnceBatch).
 */
export function pointsBatchHandler(options: PointsHandlerOptions): BatchHandler {
  return async (messages, context) => {
    const relevant: Array<{ topic: string; id: string; effects: Effect[] }> = [];
    const ignored: string[] = [];
    for (const m of messages) {
      const decoded = effectsOfMessage(m);
      if (decoded === null || decoded.effects.length === 0) ignored.push(m.topic);
      else relevant.push({ topic: m.topic, ...decoded });
    }
    // Counted once the batch is through: one that fails is delivered again and would count them twice.
    const countIgnored = () => {
      for (const topic of ignored) options.onOutcome?.(topic, 'ignored');
    };
    // Chain events other than complaints change nothing: no transaction, the bus commits the position.
    if (relevant.length === 0) return countIgnored();
    // The first message with each id not applied before (a duplicate in the batch counts once).
    const applied = new Set<(typeof relevant)[number]>();
    let effects: Effect[] = [];
    await applyOnceBatch(
      options.pool,
      options.consumer,
      relevant.map((d) => d.id),
      context,
      async (tx, fresh) => {
        const seen = new Set<string>();
        for (const d of relevant) {
          if (!fresh.has(d.id) || seen.has(d.id)) continue;
          seen.add(d.id);
          applied.add(d);
        }
        effects = [...applied].flatMap((d) => d.effects);
        await options.store.apply(tx, effects);
      },
      options.processed,
    );
    if (applied.size > 0) options.onChanged?.(changedSubjects(effects));
    countIgnored();
    for (const d of relevant) options.onOutcome?.(d.topic, applied.has(d) ? 'applied' : 'duplicate');
  };
}

/** Largest batch per transaction. */
export const POINTS_BATCH = 500;

export function subscribePoints(options: {
  bus: EventBus;
  pool: Pool;
  store: PointsStore;
  group?: string;
  onOutcome?: (topic: string, outcome: ApplyOutcome) => void;
  onChanged?: (subjects: string[]) => void;
}): Promise<Subscription> {
  const group = options.group ?? POINTS_GROUP;
  return options.bus.subscribe({
    group,
    topics: POINTS_TOPICS,
    maxBatch: POINTS_BATCH,
    valuesOnly: POINTS_VALUES_ONLY,
    batchHandler: pointsBatchHandler({
      pool: options.pool,
      store: options.store,
      consumer: group,
      onOutcome: options.onOutcome,
      onChanged: options.onChanged,
    }),
    startFrom: 'earliest',
  });
}
