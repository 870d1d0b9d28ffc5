/**
 * What a chain.events message the bus dead-letters for the Classifier holds (SubscribeOptions.onDeadLetter):
 * the Classifier never applied it, so the clock of its chain stream must stay below its block until it is
 * (engine.ts heldFor). Without that, the chunk's height, whose last event did apply, would move the clock
 * past it, and the swap it belonged to would be judged without it (an honest party blamed). Pure.
 */
import type { BusMessage } from '../../shared/bus/port.js';
import { PoisonMessageError } from '../../shared/bus/errors.js';
import { chainEvents, decode, envelopeShape } from '../../topics/index.js';
import type { WatchedChain } from './engine.js';
import type { MissingEvent, Stream } from './working-set.js';

export function missingOf(
  message: BusMessage,
  chains: ReadonlyMap<string, Pick<WatchedChain, 'reputation'>>,
): MissingEvent[] {
  if (message.topic !== chainEvents.name) return [];
  try {
    const { id, payload } = decode(chainEvents, message);
    if (!chains.has(payload.chainId)) return [];
    const stream: Stream = payload.kind === 'Complaint' ? 'reputation' : 'swap';
    return [{ chainId: payload.chainId, stream, eventId: id, block: payload.blockNumber }];
  } catch (err) {
    if (!(err instanceof PoisonMessageError)) throw err;
  }
  // It does not decode: its block and kind are unknown, so it holds both streams of the chain its key names
  // from the start, under its envelope id (a redrive brings the same id) or, without one, its position.
  const chain = chains.get(message.key);
  if (chain === undefined) return [];
  const eventId =
    envelopeId(message.value) ?? `${message.topic}/${message.partition}/${String(message.offset)}`;
  const streams: Stream[] = chain.reputation ? ['swap', 'reputation'] : ['swap'];
  return streams.map((stream) => ({ chainId: message.key, stream, eventId, block: 0 }));
}

function envelopeId(value: string): string | undefined {
  try {
    const parsed = envelopeShape.pick({ id: true }).safeParse(JSON.parse(value));
    return parsed.success ? parsed.data.id : undefined;
  } catch {
    return undefined;
  }
}
