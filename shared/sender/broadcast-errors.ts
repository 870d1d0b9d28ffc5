/**
 * What a node's errors mean for the sender: a refusal of eth_sendRawTransaction, and a failed estimate. Node
 * texts differ (geth, Erigon, Nethermind, Hardhat, BSC); these patterns cover the common ones.
 */
export type BroadcastOutcome =
  /** In the pool already or mined: the receipt decides. */
  | 'known'
  /** A replacement's fee is not high enough (or the pool is full of better ones): bump later. */
  | 'underpriced'
  /**
   * The endpoint, or an earlier nonce not yet in the pool (Hardhat's automine does not queue one): retried as
   * is, never given up on its own.
   */
  | 'transient'
  /**
   * The wallet's balance cannot pay the transaction's maximum cost (gas limit × max fee + value) beside its
   * other pending ones (geth: "insufficient funds for gas * price + value", "overdraft"). The sender decides
   * (see `Sender.follow`): it signs only what the balance it reads covers.
   */
  | 'unfunded'
  /** The node will not take this transaction: counted; after `maxRefusals` its nonce is freed. */
  | 'refused';

export function classifyBroadcastError(message: string): BroadcastOutcome {
  // The sender broadcasts a pending transaction again on every pass: a node that holds it says so, each client in
  // its words (geth "already known", Erigon "existing tx with same hash", Nethermind "AlreadyKnown", "OldNonce"
  // once mined). Counted as refusals, a call waiting a few blocks had its nonce freed (Sender.follow also asks
  // the node whether it holds a transaction it refused).
  if (
    /already ?known|known transaction|existing tx with same hash|nonce too low|old ?nonce|nonce has already been used|already imported/i.test(
      message,
    )
  )
    return 'known';
  if (
    /underpriced|fee ?too ?low|replacement|could not replace existing|txpool is full|sub-pool is full|too low for the next block|less than (the )?block base fee/i.test(
      message,
    )
  )
    return 'underpriced';
  if (/insufficient ?(funds|balance|sender balance)|overdraft/i.test(message)) return 'unfunded';
  // Nethermind's "NonceGap" is geth's "nonce too high" (an earlier nonce not in its pool yet). An endpoint's
  // limits and hiccups (Infura "project ID request rate exceeded", Alchemy "exceeded its compute
  // units per second capacity", "too many requests", a load-balanced node without the head's header): never
  // counted toward freeing the nonce, which would cancel a transaction the next pass can send.
  if (
    /nonce too high|nonce ?gap|timed? ?out|ECONN|socket|fetch failed|network|rate limit|429|503|502|exceeded|capacity|too many requests|throttl|try again|temporarily|unavailable|busy|header not found/i.test(
      message,
    )
  )
    return 'transient';
  return 'refused';
}

/**
 * Whether a failed estimate says the call itself fails: a CALL_EXCEPTION with revert data, or whose node
 * message says it reverts or runs out of gas. ethers gives every eth_estimateGas error without data that
 * code ("missing revert data"), a node's "header not found" or rate limit included, and one of those must
 * not fail a job for good.
 */
export function callFails(error: unknown): boolean {
  const e = error as { code?: unknown; data?: unknown; info?: { error?: { message?: unknown } } };
  if (e?.code !== 'CALL_EXCEPTION') return false;
  if (typeof e.data === 'string' && e.data.length > 2) return true;
  return CALL_FAILS.test(String(e.info?.error?.message ?? ''));
}

/** Node texts of a call that reverts or runs out of gas (geth, erigon, Nethermind, Hardhat, anvil). */
const CALL_FAILS =
  /revert|out of gas|gas required exceeds|exceeds allowance|invalid opcode|invalid jump|stack (underflow|overflow)|vm exception/i;
