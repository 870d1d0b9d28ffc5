import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DLQ_HEADERS, deadLetterTopic } from '../../shared/bus/port.js';
import type { Pool } from '../../shared/db/pool.js';
import { freePort } from '../../shared/net/free-port.js';
import type { RunningService } from '../../shared/runtime/service.js';
import { swapVerdicts } from '../../topics/swap.verdicts.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { serviceContext } from '../../test/support/service-context.js';
import { waitFor } from '../../test/support/wait.js';
import { startNotifier } from './index.js';
import { notifierMigrations } from './migrations.js';
import { laggingGroup } from './test-harness.js';

/**
 * A watched condition whose outbox write fails is told at a later look: the failed write must not mark the
 * episode (a lagging consumer) or the dead-letter total as told.
 */
describe('notifier watch: a failed outbox write', () => {
  let db: TestDatabase;
  let ctx: Awaited<ReturnType<typeof serviceContext>>;
  let notifier: RunningService;
  const failedKinds: string[] = [];

  /** The pool, except that the first outbox INSERT of each of these kinds throws. */
  function failingOnce(pool: Pool, kinds: readonly string[]): Pool {
    const left = new Set(kinds);
    return new Proxy(pool, {
      get(target, key) {
        const value = Reflect.get(target, key, target) as unknown;
        if (key !== 'query') return typeof value === 'function' ? value.bind(target) : value;
        return (text: unknown, params?: unknown[]) => {
          const kind = String(params?.[1]);
          if (
            typeof text === 'string' &&
            text.startsWith('INSERT INTO notifier_outbox') &&
            left.delete(kind)
          ) {
            failedKinds.push(kind);
            return Promise.reject(new Error('connection terminated'));
          }
          return target.query(text as string, params);
        };
      },
    });
  }

  beforeAll(async () => {
    db = await createTestDatabase([notifierMigrations]);
    ctx = await serviceContext(db, `n8nUrl = "http://127.0.0.1:${await freePort()}/webhook"`, ['n8nUrl']);
  });

  afterAll(async () => {
    await notifier?.stop();
    await ctx?.close();
    await db?.drop();
  });

  it('tells a lagging consumer and a dead-letter total at the next look', async () => {
    const registry = laggingGroup();
    await ctx.bus.publish(deadLetterTopic(swapVerdicts.name), [
      { key: 'a', value: '{}', headers: { [DLQ_HEADERS.error]: 'bad' } },
    ]);
    notifier = await startNotifier(
      { ...ctx, db: failingOnce(db.pool, ['consumer_lagging', 'message_dead_lettered']), metrics: registry },
      { url: ctx.config.n8nUrl!, pollMs: 50, watchIntervalMs: 50 },
    );
    const ids = async () =>
      (await db.pool.query<{ id: string }>('SELECT id FROM notifier_outbox ORDER BY id')).rows.map(
        (r) => r.id,
      );
    await waitFor(async () => (await ids()).length === 2, 'both notifications in the outbox', 5_000);
    expect(failedKinds).toEqual(['consumer_lagging', 'message_dead_lettered']);
    expect(await ids()).toEqual([
      expect.stringMatching(/^consumer_lagging:points:\d+$/),
      `message_dead_lettered:${deadLetterTopic(swapVerdicts.name)}:1`,
    ]);
  });
});
