/**
 * What a node's refusal of eth_sendRawTransaction means for the sender. Node texts differ (geth, erigon,
 * Hardhat, BSC); these patterns cover the common ones.
 */
export type BroadcastOutcome =
  /** In the pool already or mined: the receipt decides. */
  | 'known'
  /** A replacement's fee is not high enough (or the pool is full of better ones): bump later. */
  | 'underpriced'
  /**
   * The endpoint, the wallet's balance, or an earlier nonce not yet in the pool (Hardhat's automine does not
   * queue one): retried as is, never given up on its own.
   */
  | 'transient'
  /** The node will not take this transaction: counted; after `maxRefusals` its nonce is freed. */
  | 'refused';

export function classifyBroadcastError(message: string): BroadcastOutcome {
  if (
    /already known|known transaction|nonce too low|nonce has already been used|already imported/i.test(
      message,
    )
  )
    return 'known';
  if (
    /underpriced|fee too low|replacement|txpool is full|too low for the next block|less than (the )?block base fee/i.test(
      message,
    )
  )
    return 'underpriced';
  // An endpoint's limits and hiccups (Infura "project ID request rate exceeded", Alchemy "exceeded its compute
  // units per second capacity", "too many requests", a load-balanced node without the head's header): never
  // counted toward freeing the nonce, which would cancel a transaction the next pass can send.
  if (
    /nonce too high|timed? ?out|ECONN|socket|fetch failed|network|insufficient funds|rate limit|429|503|502|exceeded|capacity|too many requests|throttl|try again|temporarily|unavailable|busy|header not found/i.test(
      message,
    )
  )
    return 'transient';
  return 'refused';
}
