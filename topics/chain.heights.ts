import { z } from 'zod';
import { systemChainId, unixSeconds } from '../shared/schema/primitives.js';
import { defineTopic } from './envelope.js';

export const chainHeightPayload = z.strictObject({
  chainId: systemChainId,
  /** Which contract's stream of the chain this height belongs to (chain clients follow them separately). */
  stream: z.enum(['swap', 'reputation']).default('swap'),
  height: z.number().int().nonnegative(),
  /** Timestamp of the block at `height`: the chain's "now" for window decisions (DESIGN §5.1). */
  blockTimestamp: unixSeconds,
  /**
   * Envelope id of the last event of this stream of this chain published at or below `height` (null: none
   * yet). chain.events and chain.heights are separate topics, so a consumer may see a height before the
   * events of its chunk; it must not take `blockTimestamp` as the chain's "now" until it has handled this
   * event (events of one chain are in order on their partition), or it would judge a window on missing facts.
   */
  lastEventId: z.string().min(1).nullable().default(null),
});
export type ChainHeight = z.infer<typeof chainHeightPayload>;

export const chainHeights = defineTopic<ChainHeight>({
  name: 'chain.heights',
  type: 'chain.height',
  version: 1,
  keyDoc: 'system chain id: heights of one chain stay in order',
  key: (p) => p.chainId,
  payload: chainHeightPayload,
  // As long as chain.events: a replay of the classifier needs the heights (the chains' clocks) too.
  retentionMs: null,
  // As chain.events: a chain's heights in order, never grown (a later height handled before an earlier one).
  fixedPartitions: true,
});

export const chainHeightId = (h: Pick<ChainHeight, 'chainId' | 'stream' | 'height'>): string =>
  h.stream === 'swap' ? `${h.chainId}:height:${h.height}` : `${h.chainId}:${h.stream}-height:${h.height}`;
