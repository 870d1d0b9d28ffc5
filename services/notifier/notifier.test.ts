import { createServer, type Server } from 'node:http';
import { Gauge, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DLQ_HEADERS, deadLetterTopic } from '../../shared/bus/port.js';
import { redriveDeadLetters } from '../../shared/bus/redrive.js';
import { freePort } from '../../shared/net/free-port.js';
import type { RunningService } from '../../shared/runtime/service.js';
import { encode, envelope } from '../../topics/envelope.js';
import { complaintCommands, relayCommands as relayCommandsTopic } from '../../topics/index.js';
import { swapVerdicts, verdictId } from '../../topics/swap.verdicts.js';
import { violationId, violations } from '../../topics/violations.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { serviceContext } from '../../test/support/service-context.js';
import { waitFor } from '../../test/support/wait.js';
import { hex32, userAddress, verdictPayload, violationPayload } from '../points/test-harness.js';
import { startNotifier } from './index.js';
import { notifierMigrations } from './migrations.js';

/**
 * The n8n outbox: notifications made while the receiver is down (connection refused, then failing with 503)
 * are all delivered once it recovers, retried with back-off; none is lost and none is made twice.
 */
describe('n8n notifier outbox', () => {
  let db: TestDatabase;
  let ctx: Awaited<ReturnType<typeof serviceContext>>;
  let notifier: RunningService;
  let receiver: Server | undefined;
  let port: number;
  const received: Array<{ id: string; kind: string; [k: string]: unknown }> = [];
  let failuresLeft = 3;
  let refusedWith503 = 0;
  const registry = new Registry();
  const relayCommands = new Gauge({
    name: 'relay_commands',
    help: 'test',
    labelNames: ['status'],
    registers: [registry],
  });
  const relayFailures = new Gauge({ name: 'relay_job_failures', help: 'test', registers: [registry] });

  beforeAll(async () => {
    db = await createTestDatabase([notifierMigrations]);
    port = await freePort();
    ctx = await serviceContext(db, `n8nUrl = "http://127.0.0.1:${port}/webhook/otmoic"`, ['n8nUrl']);
    notifier = await startNotifier(
      { ...ctx, metrics: registry },
      { url: ctx.config.n8nUrl!, baseBackoffMs: 50, maxBackoffMs: 400, pollMs: 50, watchIntervalMs: 50 },
    );
  });

  afterAll(async () => {
    await notifier?.stop();
    await new Promise((resolve) => receiver?.close(resolve) ?? resolve(undefined));
    await ctx?.close();
    await db?.drop();
  });

  const outbox = async () =>
    (
      await db.pool.query<{ id: string; attempts: number; delivered: boolean }>(
        'SELECT id, attempts, delivered_at IS NOT NULL AS delivered FROM notifier_outbox ORDER BY id',
      )
    ).rows;

  it('keeps every notification while the receiver is down and delivers each once it recovers', async () => {
    const now = 1_800_000_000;
    const bids = [1, 2, 3, 4].map((n) => hex32(n));
    await ctx.bus.publish(
      violations.name,
      bids.map((bid, i) =>
        encode(
          violations,
          envelope(
            violations,
            violationPayload({ bid, party: 'user', subject: userAddress(i + 1), blockTime: now + i }),
            {
              occurredAt: now + i,
              source: 'test',
              id: violationId(bid),
            },
          ),
        ),
      ),
    );
    const complained = hex32(9);
    const verdicts = [
      verdictPayload({
        bid: complained,
        lpId: 'lp-a',
        outcome: 'violation',
        party: 'user',
        case: 1,
        blockTime: now + 10,
        complaint: {
          complainant: 'lp-a',
          complainantParty: 'lp',
          valid: true,
          invalidReason: null,
          fields: {},
        },
      } as Parameters<typeof verdictPayload>[0]),
      verdictPayload({ bid: hex32(10), lpId: 'lp-a', outcome: 'normal', blockTime: now + 11 }),
    ];
    await ctx.bus.publish(
      swapVerdicts.name,
      verdicts.map((v) =>
        encode(
          swapVerdicts,
          envelope(swapVerdicts, v, { occurredAt: v.blockTime, source: 'test', id: verdictId(v.bidId) }),
        ),
      ),
    );
    relayCommands.set({ status: 'failed' }, 2);
    relayFailures.set(3); // one of the two failed twice (re-opened between)

    // Receiver down: connection refused; rows wait and are retried with back-off.
    const expected = [
      ...bids.map((b) => `violation:${b}`),
      `complaint:${complained}`,
      'submission_failed:relay:3',
    ].sort();
    await waitFor(async () => {
      const rows = await outbox();
      return rows.length === expected.length && rows.some((r) => r.attempts >= 2);
    }, 'notifications queued and retried while the receiver is down');
    expect((await outbox()).map((r) => r.id)).toEqual(expected);
    expect((await outbox()).every((r) => !r.delivered)).toBe(true);

    // The receiver comes up failing (503 three times), then recovers.
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        if (failuresLeft > 0) {
          failuresLeft--;
          refusedWith503++;
          response.writeHead(503).end();
          return;
        }
        received.push(JSON.parse(body));
        response.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver!.listen(port, '127.0.0.1', resolve));

    await waitFor(
      async () => (await outbox()).every((r) => r.delivered),
      'every notification delivered',
      20_000,
    );
    expect(refusedWith503).toBe(3);
    expect(received.map((r) => r.id).sort()).toEqual(expected);
    expect(received.find((r) => r.id === `complaint:${complained}`)).toMatchObject({
      kind: 'complaint_outcome',
      case: 1,
      complainant: 'lp-a',
    });
    expect(received.find((r) => r.kind === 'violation')).toMatchObject({
      party: 'user',
      rule: expect.any(String),
    });

    // The same failed count again (a later look, or a restart) notifies nothing new.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(received).toHaveLength(expected.length);
  }, 60_000);

  it('tells of messages in a dead-letter topic once per total, across a restart', async () => {
    const before = received.length;
    // What a consumer's dead-lettering leaves: messages in `<topic>.dlq` (whichever process wrote them).
    await ctx.bus.publish(deadLetterTopic(swapVerdicts.name), [
      { key: 'a', value: '{}', headers: { [DLQ_HEADERS.error]: 'bad' } },
      { key: 'b', value: '{}', headers: { [DLQ_HEADERS.error]: 'bad' } },
    ]);
    const id = `message_dead_lettered:${deadLetterTopic(swapVerdicts.name)}:2`;
    await waitFor(() => received.some((r) => r.id === id), 'the dead letters told');
    expect(received.find((r) => r.id === id)).toMatchObject({
      kind: 'message_dead_lettered',
      topic: swapVerdicts.name,
      deadLetterTopic: deadLetterTopic(swapVerdicts.name),
      total: 2,
    });
    // A restarted notifier finds the same total: the same id, which the outbox holds already.
    await notifier.stop();
    notifier = await startNotifier(
      { ...ctx, metrics: registry },
      { url: ctx.config.n8nUrl!, baseBackoffMs: 50, maxBackoffMs: 400, pollMs: 50, watchIntervalMs: 50 },
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(received.slice(before).map((r) => r.id)).toEqual([id]);
  });

  it('tells the dead letters of a redrive (<topic>.dlq.dlq), not those a redrive sends back to <topic>.dlq', async () => {
    const topic = relayCommandsTopic.name;
    const [dlq, dlq2, dlq3] = [1, 2, 3].map((n) => topic + '.dlq'.repeat(n)) as [string, string, string];
    const told = async () =>
      (
        await db.pool.query<{ id: string; payload: Record<string, unknown> }>(
          `SELECT id, payload FROM notifier_outbox WHERE left(id, length($1)) = $1 ORDER BY created_at`,
          [`message_dead_lettered:${dlq}:`],
        )
      ).rows;
    const ids = async () => (await told()).map((r) => r.id.slice(`message_dead_lettered:${dlq}:`.length));
    // A dead letter that names another topic as its origin: its redrive refuses it.
    await ctx.bus.publish(dlq, [
      { key: 'a', value: '{}', headers: { [DLQ_HEADERS.error]: 'bad', [DLQ_HEADERS.topic]: 'elsewhere' } },
    ]);
    await waitFor(async () => (await ids()).includes('1'), 'the dead letter told');

    // `redrive relay.commands`: refused, moved on to relay.commands.dlq.dlq. A dead letter of the redrive, told.
    const refused = await redriveDeadLetters({ bus: ctx.bus, pool: db.pool, topic, pollMs: 20 });
    expect(refused).toMatchObject({ redriven: 0, refused: 1 });
    await waitFor(async () => (await ids()).includes('2'), 'the dead letter of the redrive told', 5_000);

    // `redrive relay.commands.dlq`: sent back to relay.commands.dlq (its total goes up), no new dead letter.
    const back = await redriveDeadLetters({ bus: ctx.bus, pool: db.pool, topic: dlq, pollMs: 20 });
    expect(back).toMatchObject({ redriven: 1, refused: 0 });
    const held = await ctx.bus.lag('nobody', [dlq]);
    expect(held.reduce((n, p) => n + p.lag, 0n)).toBe(2n);
    await new Promise((resolve) => setTimeout(resolve, 500)); // ten looks
    expect(await ids()).toEqual(['1', '2']);

    // A new dead letter after it is told, as the third.
    await ctx.bus.publish(dlq, [{ key: 'b', value: '{}', headers: { [DLQ_HEADERS.error]: 'bad' } }]);
    await waitFor(async () => (await ids()).includes('3'), 'the new dead letter told');
    expect(await ids()).toEqual(['1', '2', '3']);
    expect((await told()).at(-1)!.payload).toEqual({
      topic,
      deadLetterTopic: dlq,
      total: 3,
      levels: { [dlq]: 3, [dlq2]: 1, [dlq3]: 0 },
    });
  });

  it('a redrive of <topic>.dlq that raises its total is not told as new dead letters', async () => {
    const topic = complaintCommands.name;
    const [dlq, dlq2, dlq3] = [1, 2, 3].map((n) => topic + '.dlq'.repeat(n)) as [string, string, string];
    await ctx.bus.ensureTopics([{ name: dlq, partitions: 4, retentionMs: null }]); // and its .dlq.dlq
    // What a refusal of `redrive complaint.commands` leaves in complaint.commands.dlq.dlq.
    await ctx.bus.publish(dlq2, [
      { key: 'a', value: '{}', headers: { [DLQ_HEADERS.error]: 'refused', [DLQ_HEADERS.topic]: dlq } },
    ]);
    const back = await redriveDeadLetters({ bus: ctx.bus, pool: db.pool, topic: dlq, pollMs: 20 });
    expect(back).toMatchObject({ redriven: 1 });
    const held = await ctx.bus.lag('nobody', [dlq]);
    expect(held.reduce((n, p) => n + p.lag, 0n)).toBe(1n); // complaint.commands.dlq holds it now
    const told = async () =>
      (
        await db.pool.query<{ id: string; payload: unknown }>(
          `SELECT id, payload FROM notifier_outbox WHERE left(id, length($1)) = $1 ORDER BY created_at`,
          [`message_dead_lettered:${dlq}:`],
        )
      ).rows;
    await waitFor(async () => (await told()).length > 0, 'the dead letter of the redrive told', 5_000);
    await new Promise((resolve) => setTimeout(resolve, 500)); // ten looks more
    const rows = await told();
    // One dead letter (of the redrive): told once, whichever look saw it; the one sent back is not another.
    expect(rows.map((r) => r.id)).toEqual([`message_dead_lettered:${dlq}:1`]);
    expect(rows[0]!.payload).toMatchObject({ total: 1, levels: { [dlq2]: 1, [dlq3]: 0 } });
  });
});
