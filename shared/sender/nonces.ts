/** The wallet's next nonce, allocated locally inside the transaction that stores the signed transaction. */
import type { MigrationSet } from '../db/migrate.js';
import type { Queryable } from '../db/pool.js';

export const senderMigrations: MigrationSet = {
  namespace: 'sender',
  migrations: [
    {
      version: 1,
      name: 'the next local nonce of each sending wallet',
      sql: `
        CREATE TABLE sender_nonces (
          chain_id bigint NOT NULL,
          address text NOT NULL,
          next_nonce bigint NOT NULL,
          PRIMARY KEY (chain_id, address)
        );`,
    },
  ],
};

/**
 * Takes the next nonce of the wallet and advances it; the row stays locked until `tx` ends, so two senders can
 * never take the same nonce. Never below the node's mined count. The node's pending count is not followed:
 * the wallet sends only through this sender, so our own transactions in flight are already counted in the
 * local nonce, and a pending count above it is a wrong answer (a lagging or faulty node) that would leave a
 * gap below every later nonce: none of the wallet's transactions could be mined again.
 */
export async function takeNonce(
  tx: Queryable,
  wallet: { chainId: number; address: string; chainLatest: number },
): Promise<number> {
  await tx.query(
    `INSERT INTO sender_nonces (chain_id, address, next_nonce) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    [wallet.chainId, wallet.address, wallet.chainLatest],
  );
  const { rows } = await tx.query<{ next_nonce: string }>(
    'SELECT next_nonce FROM sender_nonces WHERE chain_id = $1 AND address = $2 FOR UPDATE',
    [wallet.chainId, wallet.address],
  );
  const nonce = Math.max(Number(rows[0]!.next_nonce), wallet.chainLatest);
  await tx.query('UPDATE sender_nonces SET next_nonce = $3 WHERE chain_id = $1 AND address = $2', [
    wallet.chainId,
    wallet.address,
    nonce + 1,
  ]);
  return nonce;
}
