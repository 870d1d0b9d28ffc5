/**
 * Many synthetic swaps as the Connector would publish them: per chain stream, the events in block order as
 * chain.events envelopes, with chain.heights messages at block boundaries naming the last event before them,
 * and a final height past every window. For the crash test and the benchmark.
 */
import type { EventBus, OutgoingMessage } from '../../shared/bus/port.js';
import {
  chainEventId,
  chainEvents,
  chainHeightId,
  chainHeights,
  encode,
  envelope,
  type ChainEvent,
} from '../../topics/index.js';
import { buildTimeline, DST, SRC, type TimelineSpec } from './swap-timeline.js';
import { INVALID_COMPLAINT_HOLD_SECONDS } from './judge.js';

export interface Traffic {
  bids: string[];
  /** One list per chain stream, each in the order the Connector publishes it; `at` is the block time. */
  streams: Array<Array<{ topic: string; message: OutgoingMessage; at: number }>>;
  events: number;
}

/**
 * Past every window of a swap: its confirms' (T+3E+3Tol), and a complaint's hold when the complaint alone
 * may decide the bid (INVALID_COMPLAINT_HOLD_SECONDS after it).
 */
export function lastWindowEnd(spec: TimelineSpec): number {
  const windows = spec.T + 3 * spec.E + 3 * spec.Tol + 20;
  return spec.complaint
    ? Math.max(windows, spec.complaint.at + INVALID_COMPLAINT_HOLD_SECONDS + 20)
    : windows;
}

export function swapTraffic(specs: readonly TimelineSpec[], heightEvery = 8): Traffic {
  const byStream = new Map<string, ChainEvent[]>([
    [`${SRC.chainId}/swap`, []],
    [`${DST.chainId}/swap`, []],
    [`${DST.chainId}/reputation`, []],
  ]);
  const bids: string[] = [];
  let latest = 0;
  for (const spec of specs) {
    const timeline = buildTimeline(spec);
    bids.push(timeline.bidId);
    byStream.get(`${SRC.chainId}/swap`)!.push(...timeline.streams[SRC.chainId]!);
    byStream.get(`${DST.chainId}/swap`)!.push(...timeline.streams[DST.chainId]!);
    byStream.get(`${DST.chainId}/reputation`)!.push(...timeline.streams.reputation!);
    latest = Math.max(latest, lastWindowEnd(spec));
  }
  const streams = [...byStream].map(([key, events]) => {
    const [chainId, stream] = key.split('/') as [string, 'swap' | 'reputation'];
    events.sort((a, b) => a.blockTimestamp - b.blockTimestamp);
    // One block per distinct block time, numbered in order.
    let block = 0;
    let blockTime = -1;
    const numbered = events.map((e, logIndex) => {
      if (e.blockTimestamp !== blockTime) {
        block += 1;
        blockTime = e.blockTimestamp;
      }
      return { ...e, blockNumber: block, logIndex } as ChainEvent;
    });
    const out: Array<{ topic: string; message: OutgoingMessage; at: number }> = [];
    const height = (h: number, at: number, lastEventId: string | null) => {
      const payload = { chainId, stream, height: h, blockTimestamp: at, lastEventId };
      out.push({
        topic: chainHeights.name,
        message: encode(
          chainHeights,
          envelope(chainHeights, payload, { id: chainHeightId(payload), occurredAt: at, source: 'traffic' }),
        ),
        at,
      });
    };
    let lastId: string | null = null;
    numbered.forEach((e, i) => {
      lastId = chainEventId(e);
      out.push({
        topic: chainEvents.name,
        message: encode(
          chainEvents,
          envelope(chainEvents, e, { id: lastId, occurredAt: e.blockTimestamp, source: 'traffic' }),
        ),
        at: e.blockTimestamp,
      });
      const next = numbered[i + 1];
      // A height only at a block boundary: no later event may carry its block time.
      if ((i + 1) % heightEvery === 0 && next && next.blockTimestamp > e.blockTimestamp)
        height(e.blockNumber, e.blockTimestamp, lastId);
    });
    height(block + 1, latest, lastId);
    return out;
  });
  return {
    bids,
    streams,
    events: streams.reduce((n, s) => n + s.filter((m) => m.topic === chainEvents.name).length, 0),
  };
}

/**
 * Publishes the traffic as chain clients following every chain at once would have it published: the streams
 * merged in block time (each stream's own order kept), `chunk` messages at a time (one publish per topic of a
 * chunk). Stream after stream instead would put every complaint after every swap event, and a live
 * Classifier would hold every swap until the last of them. `onProgress` hears how many are published so far.
 */
export async function publishTraffic(
  bus: EventBus,
  traffic: Traffic,
  chunk: number,
  onProgress?: (published: number) => void,
): Promise<void> {
  const merged = mergeByTime(traffic.streams);
  for (let i = 0; i < merged.length; i += chunk) {
    const slice = merged.slice(i, i + chunk);
    for (const topic of [chainEvents.name, chainHeights.name]) {
      const batch = slice.filter((m) => m.topic === topic).map((m) => m.message);
      if (batch.length > 0) await bus.publish(topic, batch);
    }
    onProgress?.(i + slice.length);
  }
}

/** The streams' messages in block time; at equal times, in stream order, each stream's own order kept. */
function mergeByTime<T extends { at: number }>(streams: readonly (readonly T[])[]): T[] {
  const tagged = streams.flatMap((stream, s) => stream.map((m, i) => ({ m, s, i })));
  tagged.sort((a, b) => a.m.at - b.m.at || a.s - b.s || a.i - b.i);
  return tagged.map((t) => t.m);
}
