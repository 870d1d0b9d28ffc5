import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { JobTable } from './job-table.js';
import { TEST_JOBS_TABLE } from './test-harness.js';
import { senderMigrations } from './nonces.js';
import type { SignedAttempt, WalletRef } from './types.js';

const wallet: WalletRef = { chainId: 31337, address: '0xabc', chainLatest: 7 };

function attempt(hash: string, kind: SignedAttempt['kind'] = 'call'): SignedAttempt {
  return {
    kind,
    hash,
    raw: `raw-${hash}`,
    fee: { type: 0, gasPrice: '1' },
    gasLimit: '21000',
    signedAtBlock: 1,
    signedAtMs: 0,
  };
}

describe('JobTable: the sender writes only as its state machine allows', () => {
  let db: TestDatabase;
  let jobs: JobTable;
  const row = async (id: string) =>
    (await db.pool.query(`SELECT * FROM test_jobs WHERE job = $1`, [id])).rows[0];

  beforeAll(async () => {
    db = await createTestDatabase([senderMigrations]);
    await db.pool.query(TEST_JOBS_TABLE);
    jobs = new JobTable(db.pool, 'test_jobs', 'job');
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(async () => {
    await db.pool.query(`TRUNCATE test_jobs; TRUNCATE sender_nonces`);
    await db.pool.query(`INSERT INTO test_jobs (job, status) VALUES ('a', 'scheduled'), ('b', 'scheduled')`);
  });

  it('signs a job once: two passes at once take one nonce, and the next job takes the next', async () => {
    const results = await Promise.all([
      jobs.signFirst('a', wallet, async (nonce) => attempt(`h${nonce}`)),
      jobs.signFirst('a', wallet, async (nonce) => attempt(`h${nonce}`)),
    ]);
    expect(results.filter((r) => r !== undefined)).toHaveLength(1);
    expect(await row('a')).toMatchObject({ status: 'signed', nonce: '7', tx_hash: 'h7', raw_tx: 'raw-h7' });
    expect((await jobs.signFirst('b', wallet, async (n) => attempt(`h${n}`)))?.nonce).toBe(8);
  });

  it('gives back the nonce when signing throws (nothing stored)', async () => {
    await expect(
      jobs.signFirst('a', wallet, async () => {
        throw new Error('the key is gone');
      }),
    ).rejects.toThrow('the key is gone');
    expect(await row('a')).toMatchObject({ status: 'scheduled', nonce: null, raw_tx: null });
    expect((await jobs.signFirst('a', wallet, async (n) => attempt(`h${n}`)))?.nonce).toBe(7);
  });

  it('stores a replacement only over the attempts the caller knew; a cancel records its reason', async () => {
    await jobs.signFirst('a', wallet, async (n) => attempt(`h${n}`));
    expect(await jobs.addAttempt('a', 1, attempt('bump'))).toBe(true);
    expect(await jobs.addAttempt('a', 1, attempt('stale'))).toBe(false);
    expect(await jobs.addAttempt('a', 2, attempt('cancel', 'cancel'), 'window closing')).toBe(true);
    const a = await row('a');
    expect(a.txs.map((t: SignedAttempt) => t.hash)).toEqual(['h7', 'bump', 'cancel']);
    expect(a).toMatchObject({ status: 'cancelling', tx_hash: 'cancel', cancel_reason: 'window closing' });
    // A scheduled job has no nonce to replace at.
    expect(await jobs.addAttempt('b', 0, attempt('x'))).toBe(false);
  });

  it('marks sent only a signed job, and counts problems and refusals', async () => {
    await jobs.markSent('a');
    expect((await row('a')).status).toBe('scheduled');
    await jobs.signFirst('a', wallet, async (n) => attempt(`h${n}`));
    await jobs.markSent('a');
    expect((await row('a')).status).toBe('sent');
    await jobs.note('a', 'node said no', true);
    await jobs.note('a', 'timeout');
    expect(await row('a')).toMatchObject({ attempts: 2, refusals: 1, reason: 'timeout' });
    await jobs.setMinedBlock('a', 42);
    expect((await row('a')).mined_block).toBe('42');
  });

  it('finishes an open job once, naming the transaction that was mined; a final job does not move', async () => {
    await jobs.signFirst('a', wallet, async (n) => attempt(`h${n}`));
    await jobs.addAttempt('a', 1, attempt('bump'));
    await jobs.finish('a', { status: 'confirmed', blockNumber: 9, txHash: 'h7' });
    expect(await row('a')).toMatchObject({
      status: 'confirmed',
      block_number: '9',
      tx_hash: 'h7',
      raw_tx: 'raw-h7',
    });
    await jobs.finish('a', { status: 'failed', reason: 'late' });
    expect(await row('a')).toMatchObject({ status: 'confirmed', reason: null, failures: 0 });
  });

  it('counts every failure of a job, one re-opened included; nothing else counts', async () => {
    await jobs.finish('b', { status: 'failed', reason: 'reverted' });
    await jobs.finish('b', { status: 'failed', reason: 'a stale pass' }); // final already: no move
    expect(await row('b')).toMatchObject({ status: 'failed', reason: 'reverted', failures: 1 });
    await db.pool.query(`UPDATE test_jobs SET status = 'scheduled' WHERE job = 'b'`); // re-opened
    await jobs.finish('b', { status: 'failed', reason: 'reverted again' });
    await jobs.finish('a', { status: 'confirmed', blockNumber: 4, txHash: 'ha' });
    expect(await row('b')).toMatchObject({ failures: 2 });
    expect(await row('a')).toMatchObject({ failures: 0 });
  });
});
