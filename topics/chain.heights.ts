import { z } from 'zod';
import { systemChainId, unixSeconds } from '../shared/schema/primitives.js';
import { defineTopic } from './envelope.js';

export const chainHeightPayload = z.strictObject({
  chainId: systemChainId,
  height: z.number().int().nonnegative(),
  /** Timestamp of the block at `height`: the chain's "now" for window decisions (DESIGN §5.1). */
  blockTimestamp: unixSeconds,
});
export type ChainHeight = z.infer<typeof chainHeightPayload>;

export const chainHeights = defineTopic<ChainHeight>({
  name: 'chain.heights',
  type: 'chain.height',
  version: 1,
  keyDoc: 'system chain id: heights of one chain stay in order',
  key: (p) => p.chainId,
  payload: chainHeightPayload,
  retentionMs: 7 * 24 * 3_600_000,
});
