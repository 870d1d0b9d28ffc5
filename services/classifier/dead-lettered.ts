/**
 * What a chain.events message the bus dead-letters for the Classifier holds (SubscribeOptions.onDeadLetter):
 * the Classifier never applied it, so the clock of its chain stream must stay below its block until it is
 * (engine.ts heldFor). Without that, the chunk's height, whose last event did apply, would move the clock
 * past it, and the swap it belonged to would be judged without it (an honest party blamed). Pure.
 */
import { createHash } from 'node:crypto';
import type { BusMessage } from '../../shared/bus/port.js';
import { nulAsText } from '../../shared/db/nul.js';
import { PoisonMessageError } from '../../shared/bus/errors.js';
import { chainEvents, decode, envelopeShape } from '../../topics/index.js';
import type { WatchedChain } from './engine.js';
import type { MissingEvent, Stream } from './working-set.js';

/**
 * Ids are stored with U+0000 written as the six characters \u0000: the insert would fail, and with it the dead
 * letter, for ever (a producer outside this system may send one).
 */
export function missingOf(
  message: BusMessage,
  chains: ReadonlyMap<string, Pick<WatchedChain, 'reputation'>>,
): MissingEvent[] {
  if (message.topic !== chainEvents.name) return [];
  try {
    const { id, payload } = decode(chainEvents, message);
    if (!chains.has(payload.chainId)) return [];
    const stream: Stream = payload.kind === 'Complaint' ? 'reputation' : 'swap';
    return [{ chainId: payload.chainId, stream, eventId: nulAsText(id), block: payload.blockNumber }];
  } catch (err) {
    if (!(err instanceof PoisonMessageError)) throw err;
  }
  // It does not decode: its block and kind are unknown, so it holds every stream of the chain its key names
  // from the start, under its envelope id or, without one, a digest of its value (a redrive brings the same).
  const chain = chains.get(message.key);
  if (chain === undefined) return [];
  const eventId = envelopeId(message.value) ?? `chain.events:sha256:${sha256Hex(message.value)}`;
  const streams: Stream[] = chain.reputation ? ['swap', 'reputation'] : ['swap'];
  return streams.map((stream) => ({ chainId: message.key, stream, eventId, block: 0 }));
}

function envelopeId(value: string): string | undefined {
  try {
    const parsed = envelopeShape.pick({ id: true }).safeParse(JSON.parse(value));
    return parsed.success ? nulAsText(parsed.data.id) : undefined;
  } catch {
    return undefined;
  }
}

const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');
