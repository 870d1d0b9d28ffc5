/**
 * The subscription's control connection (LISTEN wake-ups, one session advisory lock per owned partition) dropped
 * silently, as a NAT or firewall that forgot it does (test/support/tcp-proxy.ts freeze()). Before, nothing noticed:
 * wake-ups stopped, the rebalance waited for ever on it, and so did stop(); the server kept the session and its
 * partition locks. Now its heartbeat finds it, the member gives its partitions up, ends the lost session from a
 * new connection, and takes them again there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';
import { tcpProxy, throughProxy } from '../../../test/support/tcp-proxy.js';
import { waitFor } from '../../../test/support/wait.js';
import { createLogger } from '../../logging/logger.js';
import { PostgresBus } from './postgres-bus.js';

describe('postgres log: a control connection dropped silently', () => {
  let db: TestDatabase;
  let proxy: Awaited<ReturnType<typeof tcpProxy>>;
  let bus: PostgresBus;
  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = await tcpProxy(new URL(db.url));
    bus = new PostgresBus({
      pool: db.pool,
      // Only the control connection goes through the proxy: the partition workers' pool is direct.
      connectionString: throughProxy(db.url, proxy),
      log: createLogger({ level: 'silent' }),
      controlTimeoutMs: 400,
      // Wake-ups come from notifications alone within the test's waits.
      idlePollMs: 60_000,
    });
    await bus.ensureTopics([{ name: 'control', partitions: 2, retentionMs: null }]);
  }, 60_000);
  afterAll(async () => {
    await bus?.close();
    proxy?.close();
    await db?.drop();
  });

  /**
   * Backend pids of the group's control sessions holding partition locks, per the server. Of this test's
   * database only: pg_locks and pg_stat_activity show the whole server, where the files run beside this one
   * have postgres-log members of their own.
   */
  const lockHolders = async () =>
    (
      await db.pool.query<{ pid: number }>(
        `SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND pid IN (SELECT pid FROM pg_stat_activity
                        WHERE application_name = 'otmoic-bus' AND datname = current_database())`,
      )
    ).rows.map((r) => r.pid);

  it('is found, its session ended on the server, and its partitions worked again on a new one', async () => {
    const seen: string[] = [];
    const sub = await bus.subscribe({
      group: 'control-g',
      topics: ['control'],
      handler: async (message) => {
        seen.push(message.value);
      },
    });
    try {
      await bus.publish('control', [{ key: 'a', value: 'before' }]);
      await waitFor(() => seen.includes('before'), 'the message published before');
      // One control session holds the partitions. Polled: on a loaded machine (CI beside other work) a heartbeat
      // late past its 400 ms may replace the session once, and both hold a partition for a moment.
      let frozen: number | undefined;
      await waitFor(async () => {
        const holders = await lockHolders();
        frozen = holders.length === 1 ? holders[0] : undefined;
        return frozen !== undefined;
      }, 'one control session holding the partitions');

      proxy.freeze();
      await waitFor(
        async () => {
          const holders = await lockHolders();
          return holders.length === 1 && holders[0] !== frozen;
        },
        'the partitions locked by a new control session, the frozen one ended',
        10_000,
      );
      // Woken by a notification on the new control connection (the safety poll is a minute away).
      await bus.publish('control', [{ key: 'b', value: 'after' }]);
      await waitFor(() => seen.includes('after'), 'the message published after', 5_000);
      expect(seen).toEqual(['before', 'after']);
    } finally {
      const started = performance.now();
      await sub.stop();
      expect(performance.now() - started).toBeLessThan(5_000);
    }
  });
});
