import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deadLetterTopic } from '../../shared/bus/port.js';
import type { Subscription } from '../../shared/bus/port.js';
import { encode, envelope } from '../../topics/envelope.js';
import { swapVerdicts, verdictId } from '../../topics/swap.verdicts.js';
import { violationId, violations } from '../../topics/violations.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { serviceContext } from '../../test/support/service-context.js';
import { waitFor } from '../../test/support/wait.js';
import { hex32, verdictPayload, violationPayload } from '../points/test-harness.js';
import { subscribeNotifier } from './consumer.js';
import { notifierMigrations } from './migrations.js';

/**
 * Strings from a chain reach the notifications: an LP id in a TransferOut or a complaint's agreement is free
 * text, and the Classifier quotes it in an invalid complaint's reason (case 0). One holding U+0000 must still
 * be told: jsonb cannot hold that character, and the outbox insert failing dead-lettered the verdict from the
 * notifier's group (a notification lost, and a redrive failed the same way).
 */
describe('notifier: a notification whose payload holds U+0000', () => {
  let db: TestDatabase;
  let ctx: Awaited<ReturnType<typeof serviceContext>>;
  let subscription: Subscription | undefined;

  beforeAll(async () => {
    db = await createTestDatabase([notifierMigrations]);
    ctx = await serviceContext(db, `n8nUrl = "http://127.0.0.1:9/webhook"`, ['n8nUrl']);
  });

  afterAll(async () => {
    await subscription?.stop();
    await ctx?.close();
    await db?.drop();
  });

  it('is queued with the character written as \\u0000, not dead-lettered', async () => {
    const now = 1_800_000_000;
    const lpId = 'lp\u0000x';
    const reason = `case 0: lpSign does not recover an address whose DID names include ${lpId} under OtmoicSwap{chainId 614}`;
    const complained = hex32(41);
    const verdict = {
      ...verdictPayload({
        bid: complained,
        lpId,
        outcome: 'invalid_complaint',
        case: 0,
        blockTime: now,
        complaint: {
          complainant: `did-${lpId}`,
          complainantParty: null,
          valid: false,
          invalidReason: reason,
          fields: { lpId },
        },
      }),
      rule: reason,
    };
    const violated = hex32(42);
    const violation = violationPayload({ bid: violated, party: 'lp', subject: lpId, blockTime: now });
    await ctx.bus.publish(swapVerdicts.name, [
      encode(
        swapVerdicts,
        envelope(swapVerdicts, verdict, { occurredAt: now, source: 'test', id: verdictId(complained) }),
      ),
    ]);
    await ctx.bus.publish(violations.name, [
      encode(
        violations,
        envelope(violations, violation, { occurredAt: now, source: 'test', id: violationId(violated) }),
      ),
    ]);
    subscription = await subscribeNotifier({ bus: ctx.bus, pool: db.pool, onQueued: () => undefined });

    const settled = async () => {
      const lags = await ctx.bus.lag('notifier', [swapVerdicts.name, violations.name]);
      return lags.every((p) => p.lag === 0n);
    };
    await waitFor(settled, 'the notifier group handled both messages', 30_000);
    const deadLetters = await ctx.bus.lag('never-reads', [
      deadLetterTopic(swapVerdicts.name),
      deadLetterTopic(violations.name),
    ]);
    expect(deadLetters.reduce((n, p) => n + p.lag, 0n)).toBe(0n);
    const { rows } = await db.pool.query<{ id: string; payload: Record<string, unknown> }>(
      'SELECT id, payload FROM notifier_outbox ORDER BY id',
    );
    expect(rows.map((r) => r.id)).toEqual([`complaint:${complained}`, `violation:${violated}`]);
    const [complaint, violationRow] = rows;
    expect(complaint!.payload).toMatchObject({
      complainant: 'did-lp\\u0000x',
      invalidReason: reason.replace('\u0000', '\\u0000'),
    });
    expect(violationRow!.payload).toMatchObject({ subject: 'lp\\u0000x' });
  });
});
