import { CALLBACK_KEYS } from '../../shared/otmoic/abi.js';
import type { EventBody } from './event-body.js';

export type RegistrationKind = 'swap' | 'reputation';

export interface Registration {
  /** Ordering unit of its deliveries: `reg:<id>` for a registration, `history:<uuid>` for a history task. */
  lane: string;
  kind: RegistrationKind;
  callback: Record<string, string>;
  merge: boolean;
}

export interface PlannedDelivery {
  lane: string;
  url: string;
  body: string;
}

/** Events are grouped into chunks of this many blocks; a chunk's height is its last block, a multiple of 5. */
export const CHUNK_BLOCKS = 5;

/** The chunk end (height) of the chunk holding `block`. */
export const chunkEnd = (block: number): number => Math.ceil(block / CHUNK_BLOCKS) * CHUNK_BLOCKS;

/** The highest chunk end at or below `block`: where whole chunks up to it end. */
export const wholeChunksEnd = (block: number): number => Math.floor(block / CHUNK_BLOCKS) * CHUNK_BLOCKS;

export interface Chunk {
  from: number;
  to: number;
  events: EventBody[];
}

/** Splits [from, to] into chunks ending at multiples of 5 (the last one may end at `to`), events sorted in. */
export function chunksOf(from: number, to: number, events: readonly EventBody[]): Chunk[] {
  const chunks: Chunk[] = [];
  for (let start = from; start <= to;) {
    const end = Math.min(chunkEnd(start), to);
    chunks.push({
      from: start,
      to: end,
      events: events.filter((e) => {
        const n = Number(e.event.blockNumber);
        return n >= start && n <= end;
      }),
    });
    start = end + 1;
  }
  return chunks;
}

/**
 * What one registration receives for one chunk. With `merge` and an `on_height_update` URL: one
 * `update_height` body holding the chunk's events (sent even when empty: a heartbeat). Otherwise each event
 * goes to its own callback (`on_transfer_out`, …, `on_reputation`), then an `update_height` with `data: []`.
 */
export function planChunk(registration: Registration, chunk: Chunk): PlannedDelivery[] {
  const { callback, kind } = registration;
  const events = chunk.events.filter((e) => (kind === 'reputation') === (e.type === 'Reputation'));
  const heightUrl = callback.on_height_update;
  if (registration.merge && heightUrl) {
    return [
      {
        lane: registration.lane,
        url: heightUrl,
        body: JSON.stringify({ type: 'update_height', height: chunk.to, data: events }),
      },
    ];
  }
  const planned: PlannedDelivery[] = [];
  for (const event of events) {
    const url = event.type === 'Reputation' ? callback.on_reputation : callback[CALLBACK_KEYS[event.type]];
    if (url) planned.push({ lane: registration.lane, url, body: JSON.stringify(event) });
  }
  if (heightUrl) {
    planned.push({
      lane: registration.lane,
      url: heightUrl,
      // `data: []` as the original chain client sends it (a receiver may read body.data without a check).
      body: JSON.stringify({ type: 'update_height', height: chunk.to, data: [] }),
    });
  }
  return planned;
}
