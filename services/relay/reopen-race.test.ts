/**
 * A re-post re-opens a failed command only after the chain checks its re-open needs (window, swapStatus). The
 * route checks only a command it read as new or failed; one it read under way is answered its status. When the
 * sender failed such a command between the route's read and the store's locked one, the store re-opened it
 * unchecked: with an unreachable RPC, where a re-post of a failed command is refused (503), it was scheduled.
 */
import { keccak256 } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { parseCommandBody } from './command-body.js';
import { relayMigrationSets } from './migrations.js';
import { RELAY_ERRORS } from './errors.js';
import { behalfBody, relayTestConfig, startTestRelay } from './test-harness.js';

describe('a command that fails between the route reading it under way and the store locking it', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(relayMigrationSets);
  });
  afterAll(async () => {
    await db?.drop();
  });

  const preimage = '0x' + '11'.repeat(32);
  const side = (t: number) => ({
    sender: '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
    receiver: '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65',
    token: '0x0000000000000000000000000000000000000000',
    tokenAmount: 1000n,
    ethAmount: 0n,
    hashlock: keccak256(preimage),
    agreementReachedTime: t,
    expectedSingleStepTime: 60,
    tolerantSingleStepTime: 60,
    earliestRefundTime: t + 3 * 60 + 3 * 60 + 60,
  });

  it('is not re-opened unchecked: the post answers failed, and the next post is checked', async () => {
    // The RPC is unreachable: every chain check fails (CHAIN_UNAVAILABLE), so nothing checked can be re-opened.
    const relay = await startTestRelay(
      db,
      relayTestConfig({ acceptChecks: true, rpc: 'http://127.0.0.1:9' }),
    );
    try {
      const config = relayTestConfig();
      const context = {
        systemChainId: config.systemChainId,
        chainId: config.chainId,
        contractAddr: config.contractAddr,
        senderWallets: config.senderWallets,
      };
      const body = behalfBody(side(2_000_000), 'command_transfer_confirm', preimage);
      // Accepted earlier, while the chain answered; now under way.
      const { id } = await relay.store.accept(parseCommandBody('confirm_out', body, context));
      await db.pool.query(`UPDATE relay_commands SET status = 'sent' WHERE id = $1`, [id]);
      // The sender fails it right after the route's unlocked read, before the store's locked one.
      const store = relay.store as unknown as {
        find: (command: unknown, db?: unknown, lock?: boolean) => Promise<{ id: string } | undefined>;
      };
      const find = store.find.bind(relay.store);
      let failed = false;
      store.find = async (command, tx, lock) => {
        const row = await find(command, tx, lock);
        if (!lock && !failed && row?.id === id) {
          failed = true;
          await db.pool.query(
            `UPDATE relay_commands SET status = 'failed', reason = 'window closed' WHERE id = $1`,
            [id],
          );
        }
        return row;
      };
      const raced = await relay.post('/behalf/confirm_out', body);
      expect(failed).toBe(true);
      expect(JSON.stringify(raced.body)).toContain('failed');
      const row = await db.pool.query('SELECT status, reason FROM relay_commands WHERE id = $1', [id]);
      expect(row.rows[0]).toEqual({ status: 'failed', reason: 'window closed' });
      // The next post reads it failed, checks the chain first, and is refused as the chain cannot be read.
      const again = await relay.post('/behalf/confirm_out', body);
      expect(again.status).toBe(503);
      expect(again.body.code).toBe(RELAY_ERRORS.CHAIN_UNAVAILABLE.code);
    } finally {
      await relay.close();
    }
  });
});
