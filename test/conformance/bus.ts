import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { withTransaction, type Pool } from '../../shared/db/pool.js';
import {
  DLQ_HEADERS,
  PoisonMessageError,
  REDRIVEN_FROM_HEADER,
  applyOnce,
  applyOnceBatch,
  deadLetterCounts,
  deadLetterTopic,
  redriveDeadLetters,
  type BusMessage,
  type DeliveryObserver,
  type EventBus,
  type Handler,
  type Subscription,
} from '../../shared/bus/index.js';
import { publishMany } from '../../shared/bus/publish-many.js';
import { waitFor } from '../support/wait.js';

export interface BusUnderTest {
  bus: EventBus;
  /** PostgreSQL where consumers write their effects and the bus keeps positions (and, on the log, itself). */
  pool: Pool;
  /**
   * A second bus on a server of its own that the test stops and starts (Kafka: a broker; not given for the
   * postgres log, whose server is the database: see the pg_terminate_backend test). Returned with the
   * server stopped.
   */
  ownServer?(): Promise<
    | { skip: string }
    | {
        bus: EventBus;
        /**
         * Its own database: its outbox must not be shared with the main bus, which talks to another cluster
         * (whose relay would find the own server's topics missing there and set their rows aside).
         */
        pool: Pool;
        stopServer(): Promise<void>;
        startServer(): Promise<void>;
        close(): Promise<void>;
      }
  >;
  /** Whether the bus leaves out the values SubscribeOptions.valuesOnly allows it to (the postgres log does). */
  omitsValues?: boolean;
  cleanup(): Promise<void>;
}

/**
 * The contract every EventBus adapter must meet. Each test uses its own topics and groups, so the suite
 * can share one broker or database.
 */
export function busConformanceSuite(
  name: string,
  /** `observer`: to be given to the bus, which reports its deliveries to it. */
  make: (observer: DeliveryObserver) => Promise<BusUnderTest>,
  options: { skip?: string; serverOutage?: boolean } = {},
) {
  const ifOutage = options.serverOutage ? it : () => undefined;
  const suite = options.skip ? describe.skip : describe;
  suite(`EventBus conformance: ${name}`, () => {
    let t: BusUnderTest;
    const subscriptions: Subscription[] = [];
    // What the bus reported through its DeliveryObserver, by group and topic.
    const observed = new Map<string, { handled: number[]; failed: number; deadLettered: number }>();
    const reported = (group: string, topic: string) => {
      const key = `${group} ${topic}`;
      let entry = observed.get(key);
      if (!entry) observed.set(key, (entry = { handled: [], failed: 0, deadLettered: 0 }));
      return entry;
    };
    const observer: DeliveryObserver = {
      handled: (group, topic, count) => reported(group, topic).handled.push(count),
      failed: (group, topic) => reported(group, topic).failed++,
      deadLettered: (group, topic) => reported(group, topic).deadLettered++,
    };

    beforeAll(async () => {
      t = await make(observer);
      await t.pool.query(
        'CREATE TABLE IF NOT EXISTS conformance_effects (id bigserial, event_id text, key text)',
      );
      await t.pool.query(
        'CREATE TABLE IF NOT EXISTS conformance_ordered (id bigserial, consumer text, key text, seq int)',
      );
    });
    afterEach(async () => {
      // Each test's members leave at its end (fewer connections, no work left running).
      await Promise.all(subscriptions.splice(0).map((s) => s.stop()));
    });
    afterAll(async () => {
      await t?.cleanup();
    });

    const fresh = (label: string) => `${label}-${randomBytes(4).toString('hex')}`;

    async function topic(partitions = 4, label = 'conf'): Promise<string> {
      const name = fresh(label);
      await t.bus.ensureTopics([{ name, partitions, retentionMs: null }]);
      return name;
    }

    /** Publishes `perKey` messages for each key, value = JSON {key, seq}. */
    async function publishSequences(topicName: string, keys: string[], perKey: number): Promise<void> {
      for (let seq = 0; seq < perKey; seq++) {
        await t.bus.publish(
          topicName,
          keys.map((key) => ({ key, value: JSON.stringify({ key, seq }), headers: { seq: String(seq) } })),
        );
      }
    }

    async function collect(
      topicName: string | string[],
      group: string,
      handle?: (m: BusMessage, attempt: number) => Promise<void>,
      extra: { startFrom?: 'earliest' | 'latest'; maxAttempts?: number } = {},
    ) {
      const seen: BusMessage[] = [];
      const sub = await t.bus.subscribe({
        group,
        topics: Array.isArray(topicName) ? topicName : [topicName],
        ...extra,
        handler: async (m, ctx) => {
          await handle?.(m, ctx.attempt);
          seen.push(m);
        },
      });
      subscriptions.push(sub);
      return { seen, sub };
    }

    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const seqOf = (m: BusMessage) => (JSON.parse(m.value) as { seq: number }).seq;

    /** A handler that applies {key, seq} exactly once into conformance_ordered (the effect order is the id). */
    function orderedEffect(consumer: string, pool: Pool = t.pool) {
      return async (m: BusMessage, ctx: Parameters<Handler>[1]) => {
        const { key, seq } = JSON.parse(m.value) as { key: string; seq: number };
        await applyOnce(pool, consumer, `${m.topic}/${key}/${seq}`, ctx, async (tx) => {
          await tx.query('INSERT INTO conformance_ordered (consumer, key, seq) VALUES ($1, $2, $3)', [
            consumer,
            key,
            seq,
          ]);
        });
      };
    }

    async function orderedSequences(consumer: string, pool: Pool = t.pool): Promise<Map<string, number[]>> {
      const { rows } = await pool.query<{ key: string; seqs: number[] }>(
        `SELECT key, array_agg(seq ORDER BY id) AS seqs FROM conformance_ordered WHERE consumer = $1
         GROUP BY key`,
        [consumer],
      );
      return new Map(rows.map((r) => [r.key, r.seqs]));
    }

    async function orderedCount(consumer: string, pool: Pool = t.pool): Promise<number> {
      // Retried: the test's own pooled connections are among those the outage tests terminate.
      for (let attempt = 1; ; attempt++) {
        try {
          const { rows } = await pool.query<{ n: string }>(
            'SELECT count(*) AS n FROM conformance_ordered WHERE consumer = $1',
            [consumer],
          );
          return Number(rows[0]!.n);
        } catch (err) {
          if (attempt >= 5) throw err;
        }
      }
    }

    function sequencesByKey(messages: BusMessage[]): Map<string, number[]> {
      const byKey = new Map<string, number[]>();
      for (const m of messages) {
        const { key, seq } = JSON.parse(m.value) as { key: string; seq: number };
        expect(m.key).toBe(key);
        byKey.set(key, [...(byKey.get(key) ?? []), seq]);
      }
      return byKey;
    }

    it('delivers every message and keeps per-key order across partitions', async () => {
      const name = await topic(4);
      const keys = Array.from({ length: 8 }, (_, i) => `key-${i}`);
      await publishSequences(name, keys, 25);
      const { seen } = await collect(name, fresh('g'));
      await waitFor(() => seen.length >= 200, '200 messages');
      const byKey = sequencesByKey(seen);
      expect([...byKey.keys()].sort()).toEqual([...keys].sort());
      for (const seqs of byKey.values()) expect(seqs).toEqual(Array.from({ length: 25 }, (_, i) => i));
      expect(seen[0]!.headers.seq).toBeDefined();
      expect(seen[0]!.timestamp).toBeInstanceOf(Date);
    });

    it('carries values and headers byte for byte, each with its key, across topics, in a transaction or not', async () => {
      const [first, second, third, fourth] = [await topic(3), await topic(2), await topic(1), await topic(2)];
      // What a text[] literal or a JSON array must escape or could misalign: quotes, backslashes, braces,
      // commas, NULL-like words, escapes that look like JSON, newlines, non-ASCII and astral characters.
      const awkward = [
        '"quoted" \\backslash\\ {braces}, commas',
        'NULL',
        '',
        '\\u0041 is not A, \\" is not "',
        'line one\nline two\ttab\r',
        'é ü ß 漢字 🚀 \u{1F980}',
        JSON.stringify({ nested: '{"a":[1,"2",{"b":"\\\\"}]}', quote: '"' }),
      ];
      const messagesOf = (tag: string) =>
        awkward.map((value, i) => ({
          key: `${tag}${i}-${value.slice(0, 3)}`,
          value: `${tag}${value}`,
          headers: { note: awkward[(i + 2) % awkward.length]!, index: String(i) },
        }));
      const sent = new Map([
        [first, messagesOf('')],
        [second, messagesOf('2nd ')],
        [third, messagesOf('3rd ')],
        [fourth, messagesOf('4th ')],
      ]);
      const batches = [...sent].map(([name, messages]) => ({ topic: name, messages }));
      await publishMany(t.bus, batches.slice(0, 2));
      // In a caller's transaction: the same statement on the log, the outbox on Kafka.
      await withTransaction(t.pool, (tx) => publishMany(t.bus, batches.slice(2), { tx }));
      const { seen } = await collect([...sent.keys()], fresh('g'));
      await waitFor(() => seen.length >= sent.size * awkward.length, 'every message of the four topics');
      for (const [name, messages] of sent) {
        const got = seen
          .filter((m) => m.topic === name)
          .map((m) => ({
            key: m.key,
            value: m.value,
            headers: { note: m.headers.note, index: m.headers.index },
          }))
          .sort((a, b) => Number(a.headers.index) - Number(b.headers.index));
        expect(got).toEqual(messages);
      }
    });

    it('commits only after the handler succeeded: a failed message is delivered again, in order', async () => {
      const name = await topic(1);
      await publishSequences(name, ['k'], 5);
      let failedOnce = false;
      const { seen } = await collect(name, fresh('g'), async (m) => {
        if (JSON.parse(m.value).seq === 2 && !failedOnce) {
          failedOnce = true;
          throw new Error('transient');
        }
      });
      await waitFor(() => seen.length >= 5, '5 messages');
      expect(sequencesByKey(seen).get('k')).toEqual([0, 1, 2, 3, 4]);
      expect(failedOnce).toBe(true);
    });

    it('resumes a group from its committed offset after a stop, without loss', async () => {
      const name = await topic(2);
      const group = fresh('g');
      await publishSequences(name, ['a', 'b'], 10);
      const first = await collect(name, group);
      await waitFor(() => first.seen.length >= 20, 'first 20');
      await first.sub.stop();
      await publishSequences(name, ['a', 'b'], 5); // seq 0..4 again, after the stop
      const second = await collect(name, group);
      await waitFor(() => second.seen.length >= 10, 'the 10 new ones');
      await new Promise((r) => setTimeout(r, 300));
      expect(second.seen).toHaveLength(10); // nothing committed before the stop comes back
    });

    it('replays from the beginning, a timestamp and an offset', async () => {
      const name = await topic(1);
      const group = fresh('g');
      await publishSequences(name, ['k'], 3);
      await new Promise((r) => setTimeout(r, 1_100));
      const middle = new Date();
      await new Promise((r) => setTimeout(r, 50));
      await t.bus.publish(
        name,
        [3, 4].map((seq) => ({ key: 'k', value: JSON.stringify({ key: 'k', seq }) })),
      );

      const all = await collect(name, group);
      await waitFor(() => all.seen.length >= 5, 'all 5');
      await all.sub.stop();

      await t.bus.seek(group, name, { to: 'beginning' });
      const again = await collect(name, group);
      await waitFor(() => again.seen.length >= 5, 'replay of 5');
      expect(again.seen.map((m) => m.value)).toEqual(all.seen.map((m) => m.value));
      await again.sub.stop();

      await t.bus.seek(group, name, { to: 'timestamp', at: middle });
      const fromTime = await collect(name, group);
      await waitFor(() => fromTime.seen.length >= 2, 'the 2 after the timestamp');
      await new Promise((r) => setTimeout(r, 300));
      expect(sequencesByKey(fromTime.seen).get('k')).toEqual([3, 4]);
      await fromTime.sub.stop();

      const third = all.seen[1]!;
      await t.bus.seek(group, name, { to: 'offset', partition: third.partition, offset: third.offset });
      const fromOffset = await collect(name, group);
      await waitFor(() => fromOffset.seen.length >= 4, 'the 4 from the offset');
      expect(sequencesByKey(fromOffset.seen).get('k')).toEqual([1, 2, 3, 4]);
    });

    it('a new group starting at "latest" skips what was published before it', async () => {
      const name = await topic(2);
      await publishSequences(name, ['a', 'b'], 3);
      const { seen } = await collect(name, fresh('g'), undefined, { startFrom: 'latest' });
      // No pause: once subscribe() resolved, the group's starting position is fixed.
      await t.bus.publish(name, [{ key: 'a', value: JSON.stringify({ key: 'a', seq: 99 }) }]);
      await waitFor(() => seen.length >= 1, 'the new message');
      await new Promise((r) => setTimeout(r, 300));
      expect(seen.map((m) => JSON.parse(m.value).seq)).toEqual([99]);
    });

    it('moves a failing message to the dead-letter topic after bounded attempts and goes on', async () => {
      const name = await topic(1);
      const group = fresh('g');
      await publishSequences(name, ['k'], 4);
      const attempts = new Map<number, number>();
      const { seen } = await collect(
        name,
        group,
        async (m, attempt) => {
          const seq = JSON.parse(m.value).seq as number;
          attempts.set(seq, attempt);
          if (seq === 1) throw new Error('always fails');
          if (seq === 2) throw new PoisonMessageError('cannot be parsed');
        },
        { maxAttempts: 3 },
      );
      const dead = await collect(deadLetterTopic(name), fresh('dlq'));
      await waitFor(() => seen.length >= 2 && dead.seen.length >= 2, 'handled and dead-lettered');
      expect(sequencesByKey(seen).get('k')).toEqual([0, 3]);
      expect(attempts.get(1)).toBe(3); // bounded retries
      expect(attempts.get(2)).toBe(1); // poison: no retry
      const [first, second] = dead.seen;
      expect(JSON.parse(first!.value).seq).toBe(1);
      expect(first!.headers[DLQ_HEADERS.error]).toBe('always fails');
      expect(first!.headers[DLQ_HEADERS.attempts]).toBe('3');
      expect(first!.headers[DLQ_HEADERS.topic]).toBe(name);
      expect(first!.headers[DLQ_HEADERS.group]).toBe(group);
      expect(first!.headers.seq).toBe('1'); // original headers kept
      expect(JSON.parse(second!.value).seq).toBe(2);
    });

    it('headers holding U+0000 (a dead letter whose error quotes a string from a chain) are stored with it as \\u0000', async () => {
      const name = await topic(1);
      await t.bus.publish(name, [
        { key: 'k', value: JSON.stringify({ key: 'k', seq: 0 }), headers: { note: 'lp\u0000x' } },
        { key: 'k', value: JSON.stringify({ key: 'k', seq: 1 }), headers: { note: 'lp\u0000y' } },
      ]);
      const { seen } = await collect(name, fresh('g'), async (m) => {
        if (JSON.parse(m.value).seq === 0) throw new PoisonMessageError('unknown LP "lp\u0000x"');
      });
      const dead = await collect(deadLetterTopic(name), fresh('dlq'));
      // The dead letter is written and the group goes on past it.
      await waitFor(() => seen.length >= 1 && dead.seen.length >= 1, 'handled and dead-lettered');
      expect(seen.map((m) => JSON.parse(m.value).seq)).toEqual([1]);
      expect(seen[0]!.headers.note).toBe('lp\\u0000y');
      expect(dead.seen[0]!.headers[DLQ_HEADERS.error]).toBe('unknown LP "lp\\u0000x"');
      expect(dead.seen[0]!.headers.note).toBe('lp\\u0000x');
    });

    it('redrives dead letters to their topic once: the failed group takes them, the others skip them', async () => {
      const name = await topic(2);
      await publishSequences(name, ['a', 'b'], 3);
      // Group "broken" cannot handle seq 1 until it is fixed; group "fine" handles everything.
      let fixed = false;
      const broken = fresh('broken');
      const fine = fresh('fine');
      const handledBy = (consumer: string) => async (m: BusMessage, ctx: Parameters<Handler>[1]) => {
        if (consumer === broken && !fixed && seqOf(m) === 1) throw new Error('a bug');
        await orderedEffect(consumer)(m, ctx);
      };
      subscriptions.push(
        await t.bus.subscribe({ group: broken, topics: [name], handler: handledBy(broken), maxAttempts: 2 }),
        await t.bus.subscribe({ group: fine, topics: [name], handler: handledBy(fine) }),
      );
      await waitFor(
        async () => (await orderedCount(broken)) === 4 && (await orderedCount(fine)) === 6,
        'both groups past every message',
      );
      expect(await deadLetterCounts(t.bus, name)).toEqual({ topic: name, deadLetters: 2n, notRedriven: 2n });

      fixed = true;
      expect(await redriveDeadLetters({ bus: t.bus, pool: t.pool, topic: name, pollMs: 50 })).toEqual({
        topic: name,
        redriven: 2,
        refused: 0,
        failed: 0,
      });
      await waitFor(async () => (await orderedCount(broken)) === 6, 'the fixed group took the dead letters');
      const sequences = await orderedSequences(broken);
      expect(sequences.get('a')).toEqual([0, 2, 1]);
      expect(sequences.get('b')).toEqual([0, 2, 1]);
      // The other group applied each message once: the copies are skipped by their ids.
      const { seen } = await collect(name, fresh('reader'));
      await waitFor(() => seen.length >= 8, 'the topic with the two re-sent messages');
      const again = seen.filter((m) => m.headers[REDRIVEN_FROM_HEADER] !== undefined);
      expect(again.map((m) => [m.key, seqOf(m)]).sort()).toEqual([
        ['a', 1],
        ['b', 1],
      ]);
      for (const m of again) {
        expect(m.headers[REDRIVEN_FROM_HEADER]).toMatch(new RegExp(`^${deadLetterTopic(name)}/\\d+/\\d+$`));
        expect(m.headers.seq).toBe('1'); // its own headers kept, the bus's x-dlq-* removed
        expect(Object.keys(m.headers).filter((h) => h.startsWith('x-dlq-'))).toEqual([]);
      }
      await pause(300);
      expect(await orderedCount(fine)).toBe(6);

      // A second run re-sends nothing.
      expect(await redriveDeadLetters({ bus: t.bus, pool: t.pool, topic: name, pollMs: 50 })).toEqual({
        topic: name,
        redriven: 0,
        refused: 0,
        failed: 0,
      });
      expect(await deadLetterCounts(t.bus, name)).toEqual({ topic: name, deadLetters: 2n, notRedriven: 0n });
    });

    it('a dead letter that does not name its topic is not re-sent: it moves on to the next dead-letter topic', async () => {
      const name = await topic(1);
      const dlq = deadLetterTopic(name);
      await t.bus.ensureTopics([{ name: dlq, partitions: 1, retentionMs: null }]);
      await t.bus.publish(dlq, [
        { key: 'k', value: '{"seq":0}', headers: { [DLQ_HEADERS.topic]: 'another.topic' } },
        { key: 'k', value: '{"seq":1}', headers: { [DLQ_HEADERS.topic]: name, [DLQ_HEADERS.error]: 'x' } },
      ]);
      expect(await redriveDeadLetters({ bus: t.bus, pool: t.pool, topic: name, pollMs: 50 })).toEqual({
        topic: name,
        redriven: 1,
        refused: 1,
        failed: 0,
      });
      const { seen } = await collect(name, fresh('reader'));
      const deeper = await collect(deadLetterTopic(dlq), fresh('reader'));
      await waitFor(() => seen.length >= 1 && deeper.seen.length >= 1, 'the re-sent and the refused');
      expect(seen.map((m) => m.value)).toEqual(['{"seq":1}']);
      expect(deeper.seen[0]!.value).toBe('{"seq":0}');
      expect(deeper.seen[0]!.headers[DLQ_HEADERS.error]).toMatch(/names topic another\.topic/);
    });

    it('a dead letter whose redrive failed keeps its origin: redriving both levels brings it home', async () => {
      const name = await topic(1);
      const dlq = deadLetterTopic(name);
      const failing = await collect(name, fresh('g'), async () => {
        throw new PoisonMessageError('original cause');
      });
      await publishSequences(name, ['k'], 1);
      await waitFor(async () => (await deadLetterCounts(t.bus, name)).deadLetters === 1n, 'dead-lettered');
      await failing.sub.stop();
      // The redrive's re-publish to the topic fails for good (the database refuses it, as in an outage); the
      // postgres log writes bus_messages, Kafka its outbox.
      await t.pool.query(`CREATE OR REPLACE FUNCTION conformance_refuse() RETURNS trigger AS $$
        BEGIN IF NEW.topic = TG_ARGV[0] THEN RAISE EXCEPTION 'outage (test)'; END IF; RETURN NEW; END $$
        LANGUAGE plpgsql`);
      const tables = ['bus_messages', 'bus_outbox'];
      const existing = (
        await t.pool.query<{ t: string }>(
          `SELECT t FROM unnest($1::text[]) AS t WHERE to_regclass(t) IS NOT NULL`,
          [tables],
        )
      ).rows.map((r) => r.t);
      for (const table of existing)
        await t.pool.query(
          `CREATE TRIGGER conformance_refuse BEFORE INSERT ON ${table} FOR EACH ROW
           EXECUTE FUNCTION conformance_refuse('${name}')`,
        );
      let first;
      try {
        first = await redriveDeadLetters({ bus: t.bus, pool: t.pool, topic: name, pollMs: 50 });
      } finally {
        for (const table of existing) await t.pool.query(`DROP TRIGGER conformance_refuse ON ${table}`);
      }
      // Told, not silent: it moved on to <topic>.dlq.dlq.
      expect(first).toEqual({ topic: name, redriven: 0, refused: 0, failed: 1 });
      const deeper = await collect(deadLetterTopic(dlq), fresh('reader'));
      await waitFor(() => deeper.seen.length >= 1, 'the dead letter one level down');
      expect(deeper.seen[0]!.headers[DLQ_HEADERS.topic]).toBe(dlq);
      expect(JSON.parse(deeper.seen[0]!.headers[DLQ_HEADERS.prior]!)).toEqual([
        expect.objectContaining({ [DLQ_HEADERS.topic]: name, [DLQ_HEADERS.error]: 'original cause' }),
      ]);
      // Back to <topic>.dlq with its first dead letter's headers, then home.
      expect(await redriveDeadLetters({ bus: t.bus, pool: t.pool, topic: dlq, pollMs: 50 })).toEqual({
        topic: dlq,
        redriven: 1,
        refused: 0,
        failed: 0,
      });
      expect(await redriveDeadLetters({ bus: t.bus, pool: t.pool, topic: name, pollMs: 50 })).toEqual({
        topic: name,
        redriven: 1,
        refused: 0,
        failed: 0,
      });
      const home = await collect(name, fresh('reader'));
      await waitFor(() => home.seen.length >= 2, 'the original and the redriven message');
      expect(home.seen.map(seqOf)).toEqual([0, 0]);
    }, 120_000);

    it('a clean stop during the last attempt does not dead-letter the message; the next member applies it', async () => {
      const name = await topic(1);
      const group = fresh('g');
      await t.bus.publish(name, [{ key: 'k', value: 'good message' }]);
      let attempts = 0;
      let entered!: () => void;
      const inLastAttempt = new Promise<void>((resolve) => (entered = resolve));
      const sub = await t.bus.subscribe({
        group,
        topics: [name],
        maxAttempts: 2,
        handler: async (_m, ctx) => {
          attempts++;
          if (attempts === 1) throw new Error('transient');
          entered();
          // A long handler that gives up at a safe point when the consumer stops, as HandlerContext asks.
          await new Promise((_, reject) =>
            ctx.signal.addEventListener('abort', () => reject(new Error('stopping')), { once: true }),
          );
        },
      });
      await inLastAttempt;
      await sub.stop();
      expect((await deadLetterCounts(t.bus, name)).deadLetters).toBe(0n);
      // The stopped attempt did not count: the next member has one attempt left, and it succeeds.
      const next = await collect(name, group, undefined, { maxAttempts: 2 });
      await waitFor(() => next.seen.length >= 1, 'applied by the next member');
      expect((await deadLetterCounts(t.bus, name)).deadLetters).toBe(0n);
    }, 60_000);

    it('applies effects exactly once under duplicate publishes and redelivery', async () => {
      const name = await topic(2);
      const consumer = fresh('c');
      const ids = Array.from({ length: 20 }, (_, i) => `event-${consumer}-${i}`);
      const send = () =>
        t.bus.publish(
          name,
          ids.map((id) => ({ key: id, value: id })),
        );
      await send();
      await send(); // an at-least-once producer resent everything
      let crashedAfterEffect = 0;
      const handled: string[] = [];
      const sub = await t.bus.subscribe({
        group: fresh('g'),
        topics: [name],
        handler: async (m, ctx) => {
          await applyOnce(t.pool, consumer, m.value, ctx, async (tx) => {
            await tx.query('INSERT INTO conformance_effects (event_id, key) VALUES ($1, $2)', [
              m.value,
              m.key,
            ]);
          });
          handled.push(m.value);
          // Fail after the effect committed: the redelivery must be a no-op.
          if (m.value.endsWith('-7') && crashedAfterEffect++ === 0) throw new Error('crash after commit');
        },
      });
      subscriptions.push(sub);
      await waitFor(() => handled.length >= 40, 'every delivery handled');
      const { rows } = await t.pool.query<{ n: string; d: string }>(
        'SELECT count(*) AS n, count(DISTINCT event_id) AS d FROM conformance_effects WHERE event_id LIKE $1',
        [`event-${consumer}-%`],
      );
      expect(Number(rows[0]!.n)).toBe(20);
      expect(Number(rows[0]!.d)).toBe(20);
    });

    it('shares partitions between members of a group, each message to one member', async () => {
      const name = await topic(6);
      const group = fresh('g');
      const keys = Array.from({ length: 12 }, (_, i) => `m-${i}`);
      const a = await collect(name, group);
      const b = await collect(name, group);
      await new Promise((r) => setTimeout(r, 1_500)); // let the members settle
      await publishSequences(name, keys, 10);
      await waitFor(() => a.seen.length + b.seen.length >= 120, '120 messages across members');
      await new Promise((r) => setTimeout(r, 500));
      expect(a.seen.length + b.seen.length).toBe(120);
      expect(a.seen.length).toBeGreaterThan(0);
      expect(b.seen.length).toBeGreaterThan(0);
      for (const seqs of sequencesByKey([...a.seen, ...b.seen]).values()) expect(seqs).toHaveLength(10);
    });

    it('seeks to the beginning, an offset, a time and the end while the group is running', async () => {
      const name = await topic(1);
      const group = fresh('g');
      await publishSequences(name, ['k'], 3);
      let gate: Promise<void> | undefined;
      let entered = 0;
      const { seen } = await collect(name, group, async () => {
        entered++;
        await gate;
      });
      await waitFor(() => seen.length >= 3, 'the first 3');

      await t.bus.seek(group, name, { to: 'beginning' });
      await waitFor(() => seen.length >= 6, 'the 3 again, without a restart');
      expect(seen.map(seqOf)).toEqual([0, 1, 2, 0, 1, 2]);

      await t.bus.seek(group, name, { to: 'offset', partition: seen[1]!.partition, offset: seen[1]!.offset });
      await waitFor(() => seen.length >= 8, 'from offset 1');
      expect(seen.slice(6).map(seqOf)).toEqual([1, 2]);

      await pause(1_100);
      const middle = new Date();
      await pause(50);
      await t.bus.publish(name, [{ key: 'k', value: JSON.stringify({ key: 'k', seq: 3 }) }]);
      await waitFor(() => seen.length >= 9, 'seq 3');
      await t.bus.seek(group, name, { to: 'timestamp', at: middle });
      await waitFor(() => seen.length >= 10, 'seq 3 again, from the time');
      expect(seen.slice(8).map(seqOf)).toEqual([3, 3]);

      // The end, with a backlog the member is in the middle of: the rest of the backlog is skipped.
      let release!: () => void;
      gate = new Promise<void>((r) => (release = r));
      await publishSequences(name, ['k'], 10); // seq 0..9 again, offsets 4..13
      // The member is in its handler with the backlog's first message (the 11th it took), held there.
      await waitFor(() => entered >= 11, 'held at the first of the backlog');
      expect(seen).toHaveLength(10);
      await t.bus.seek(group, name, { to: 'end' });
      expect((await t.bus.lag(group, [name])).map((p) => p.lag)).toEqual([0n]);
      gate = undefined;
      release();
      await pause(1_000);
      await t.bus.publish(name, [{ key: 'k', value: JSON.stringify({ key: 'k', seq: 99 }) }]);
      await waitFor(() => seen.some((m) => seqOf(m) === 99), 'the message after the end');
      await pause(300);
      // The held message finished (its commit was fenced by the seek); nothing else of the backlog ran.
      expect(seen.slice(10).map(seqOf)).toEqual([0, 99]);
      // seq 99 is committed after its handler returned.
      await waitFor(async () => (await t.bus.lag(group, [name])).every((p) => p.lag === 0n), 'lag 0');
    });

    it('a seek to an offset the partition cannot have is refused and moves nothing; its end is taken', async () => {
      const name = await topic(1);
      const group = fresh('g');
      await publishSequences(name, ['k'], 3);
      const { seen, sub } = await collect(name, group);
      await waitFor(() => seen.length >= 3, 'the three messages');
      await sub.stop();
      // A Kafka member would take a position past the end for a topic created again, and start over.
      await expect(t.bus.seek(group, name, { to: 'offset', partition: 0, offset: 99n })).rejects.toThrow(
        `seek: offset 99 is outside partition 0 of ${name} (0 to its end 3)`,
      );
      await expect(t.bus.seek(group, name, { to: 'offset', partition: 7, offset: 0n })).rejects.toThrow(
        `seek: ${name} has no partition 7`,
      );
      // The log's end beside the lag (a replay consumes to the ends it read when it began: consume-to-ends.ts).
      expect((await t.bus.lag(group, [name])).map((l) => [l.lag, l.end])).toEqual([[0n, 3n]]);
      await t.bus.seek(group, name, { to: 'offset', partition: 0, offset: 3n });
      await t.bus.seek(group, name, { to: 'offset', partition: 0, offset: 1n });
      expect((await t.bus.lag(group, [name])).map((l) => [l.lag, l.end])).toEqual([[2n, 3n]]);
    });

    it('a seek to the end of a stopped group: lag 0, and a new member replays nothing', async () => {
      const name = await topic(2);
      const group = fresh('g');
      await publishSequences(name, ['a', 'b'], 3);
      await t.bus.seek(group, name, { to: 'end' });
      expect((await t.bus.lag(group, [name])).every((p) => p.lag === 0n)).toBe(true);
      const { seen } = await collect(name, group);
      await t.bus.publish(name, [{ key: 'a', value: JSON.stringify({ key: 'a', seq: 7 }) }]);
      await waitFor(() => seen.length >= 1, 'the new message');
      await pause(500);
      expect(seen.map(seqOf)).toEqual([7]);
    });

    it('members joining and leaving mid-stream: no loss, effects once each, in per-key order', async () => {
      const name = await topic(6);
      const group = fresh('g');
      const consumer = fresh('members');
      const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
      const perKey = 40;
      const member = async () => {
        const sub = await t.bus.subscribe({ group, topics: [name], handler: orderedEffect(consumer) });
        subscriptions.push(sub);
        return sub;
      };
      const a = await member();
      const publishing = (async () => {
        for (let seq = 0; seq < perKey; seq++) {
          await t.bus.publish(
            name,
            keys.map((key) => ({ key, value: JSON.stringify({ key, seq }) })),
          );
          await pause(25);
        }
      })();
      await pause(300);
      const b = await member();
      await pause(300);
      await a.stop();
      const c = await member();
      await pause(300);
      await b.stop();
      await publishing;
      await waitFor(
        async () => (await orderedCount(consumer)) >= keys.length * perKey,
        'every effect',
        60_000,
      );
      await c.stop();
      expect(await orderedCount(consumer)).toBe(keys.length * perKey);
      const sequences = await orderedSequences(consumer);
      expect(sequences.size).toBe(keys.length);
      for (const seqs of sequences.values()) expect(seqs).toEqual(seqs.map((_, i) => i));
    });

    it('a commit that fails is not a handler failure: nothing handled is dead-lettered', async () => {
      const name = await topic(1);
      const group = fresh('g');
      // The first commit of this group fails, inside the database. A sequence counts the calls: its
      // nextval survives the rollback of the failing transaction.
      const counter = `conformance_fail_${group}`;
      await t.pool.query(`CREATE SEQUENCE "${counter}"`);
      await t.pool.query(`CREATE OR REPLACE FUNCTION conformance_fail_commit() RETURNS trigger AS $$
        BEGIN
          IF NEW.next_offset <> OLD.next_offset
             AND to_regclass(format('%I', 'conformance_fail_' || NEW.group_id)) IS NOT NULL
             AND nextval(format('%I', 'conformance_fail_' || NEW.group_id)) = 1 THEN
            RAISE EXCEPTION 'commit refused (test)';
          END IF;
          RETURN NEW;
        END $$ LANGUAGE plpgsql`);
      await t.pool.query(`CREATE OR REPLACE TRIGGER conformance_fail_commit BEFORE UPDATE ON bus_group_offsets
        FOR EACH ROW EXECUTE FUNCTION conformance_fail_commit()`);
      await publishSequences(name, ['k'], 3);
      const { seen } = await collect(name, group, undefined, { maxAttempts: 1 });
      const dead = await collect(deadLetterTopic(name), fresh('dlq'));
      await waitFor(() => new Set(seen.map(seqOf)).size >= 3, 'all 3 handled');
      await pause(1_000);
      const calls = await t.pool.query<{ is_called: boolean }>(`SELECT is_called FROM "${counter}"`);
      expect(calls.rows[0]!.is_called).toBe(true); // a commit did fail
      expect(dead.seen).toHaveLength(0);
      // At least once: the message whose commit failed may come again, in order.
      expect(seen.map(seqOf).filter((v, i, all) => all.indexOf(v) === i)).toEqual([0, 1, 2]);
      await waitFor(async () => (await t.bus.lag(group, [name])).every((p) => p.lag === 0n), 'lag 0');
    });

    it('database connections dropped mid-stream (pg_terminate_backend): the group goes on, no loss', async () => {
      const name = await topic(4);
      const consumer = fresh('drop');
      const keys = Array.from({ length: 8 }, (_, i) => `k${i}`);
      const sub = await t.bus.subscribe({
        group: fresh('g'),
        topics: [name],
        handler: orderedEffect(consumer),
      });
      subscriptions.push(sub);
      // The test's own publishes meet terminated connections too: each is retried (a publish is atomic).
      const publish = async (seq: number) => {
        for (let attempt = 1; ; attempt++) {
          try {
            return await t.bus.publish(
              name,
              keys.map((key) => ({ key, value: JSON.stringify({ key, seq }) })),
            );
          } catch (err) {
            if (attempt >= 10) throw err;
            await pause(50);
          }
        }
      };
      const publishing = (async () => {
        for (let seq = 0; seq < 50; seq++) {
          await publish(seq);
          await pause(10);
        }
      })();
      publishing.catch(() => undefined); // awaited below; not unhandled meanwhile
      // Every other session of this database, again and again while the stream runs.
      const admin = await t.pool.connect();
      try {
        for (let i = 0; i < 8; i++) {
          await pause(150);
          // Half the rounds spare the bus's own long-lived sessions: then only the pool's queries fail.
          await admin.query(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()
               AND ($1 OR application_name NOT IN ('otmoic-bus', 'otmoic-outbox'))`,
            [i % 2 === 0],
          );
        }
      } finally {
        admin.release(true);
      }
      await publishing;
      await waitFor(async () => (await orderedCount(consumer)) >= 400, 'every effect', 60_000);
      const sequences = await orderedSequences(consumer);
      for (const seqs of sequences.values()) expect(seqs).toEqual(seqs.map((_, i) => i));
      expect(await orderedCount(consumer)).toBe(400);
    });

    it('stop() waits for the handler in flight; the next member goes on after it', async () => {
      const name = await topic(1);
      const group = fresh('g');
      await publishSequences(name, ['k'], 5);
      let finished = 0;
      let inSeq1!: () => void;
      const seq1Entered = new Promise<void>((resolve) => (inSeq1 = resolve));
      const first = await collect(name, group, async (m) => {
        if (seqOf(m) === 1) {
          inSeq1();
          await pause(800);
        }
        finished++;
      });
      await seq1Entered; // seq 1 is in its handler now
      await first.sub.stop();
      const atStop = finished;
      expect(atStop).toBeGreaterThanOrEqual(2); // seq 1 finished before stop() resolved
      await pause(300);
      expect(finished).toBe(atStop); // and nothing ran after it
      const second = await collect(name, group);
      await waitFor(() => first.seen.length + second.seen.length >= 5, 'the rest');
      await pause(300);
      expect([...first.seen, ...second.seen].map(seqOf)).toEqual([0, 1, 2, 3, 4]);
    });

    it('a publish in a rolled-back transaction never reaches consumers; a committed one does', async () => {
      const name = await topic(2);
      const { seen } = await collect(name, fresh('g'));
      await expect(
        withTransaction(t.pool, async (tx) => {
          await t.bus.publish(name, [{ key: 'a', value: JSON.stringify({ key: 'a', seq: 1 }) }], { tx });
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      await withTransaction(t.pool, async (tx) => {
        await t.bus.publish(name, [{ key: 'a', value: JSON.stringify({ key: 'a', seq: 2 }) }], { tx });
      });
      await waitFor(() => seen.length >= 1, 'the committed message');
      await pause(1_000);
      expect(seen.map(seqOf)).toEqual([2]);
    });

    it('one group over several topics: each topic delivered, lag and seek per topic', async () => {
      const one = await topic(2);
      const two = await topic(3);
      const group = fresh('g');
      await publishSequences(one, ['a', 'b'], 3);
      await publishSequences(two, ['c'], 4);
      const { seen } = await collect([one, two], group);
      await waitFor(() => seen.length >= 10, 'both topics');
      expect(seen.filter((m) => m.topic === one)).toHaveLength(6);
      expect(seen.filter((m) => m.topic === two)).toHaveLength(4);
      await waitFor(
        async () => (await t.bus.lag(group, [one, two])).every((p) => p.lag === 0n),
        'lag 0 on both',
      );
      expect(new Set((await t.bus.lag(group, [one, two])).map((p) => p.topic))).toEqual(new Set([one, two]));
      await t.bus.seek(group, two, { to: 'beginning' });
      await waitFor(() => seen.length >= 14, 'topic two again');
      await pause(500);
      expect(seen.slice(10).every((m) => m.topic === two)).toBe(true);
      expect(seen).toHaveLength(14);
    });

    it('a failing handler on a dead-letter topic dead-letters into its own dead-letter topic', async () => {
      const name = await topic(1);
      const dlq = deadLetterTopic(name);
      await collect(name, fresh('g'), async () => {
        throw new PoisonMessageError('bad');
      });
      await collect(dlq, fresh('g'), async () => {
        throw new PoisonMessageError('still bad');
      });
      const last = await collect(deadLetterTopic(dlq), fresh('g'));
      await publishSequences(name, ['k'], 1);
      await waitFor(() => last.seen.length >= 1, 'the message two dead-letter topics down', 30_000);
      expect(last.seen[0]!.headers[DLQ_HEADERS.error]).toBe('still bad');
    });

    it('a publish to a topic that does not exist fails within a bounded time', async () => {
      const started = Date.now();
      await expect(t.bus.publish(fresh('missing'), [{ key: 'k', value: 'v' }])).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(45_000);
    }, 60_000);

    ifOutage(
      'the server stops and comes back: a failed connect is retried, nothing is lost',
      async () => {
        const own = await t.ownServer!();
        if ('skip' in own) throw new Error(`no server of its own: ${own.skip}`);
        try {
          await own.pool.query(
            'CREATE TABLE IF NOT EXISTS conformance_ordered (id bigserial, consumer text, key text, seq int)',
          );
          const name = fresh('outage');
          // The server is down: the first call fails, and the bus must not remember that failure.
          await expect(own.bus.ensureTopics([{ name, partitions: 2, retentionMs: null }])).rejects.toThrow();
          await own.startServer();
          await own.bus.ensureTopics([{ name, partitions: 2, retentionMs: null }]);
          const consumer = fresh('outage');
          const sub = await own.bus.subscribe({
            group: fresh('g'),
            topics: [name],
            handler: orderedEffect(consumer, own.pool),
          });
          const send = (seq: number) =>
            withTransaction(own.pool, (tx) =>
              own.bus.publish(
                name,
                ['a', 'b'].map((key) => ({ key, value: JSON.stringify({ key, seq }) })),
                { tx },
              ),
            );
          for (let seq = 0; seq < 5; seq++) await send(seq);
          await waitFor(async () => (await orderedCount(consumer, own.pool)) >= 10, 'before the outage');
          await own.stopServer();
          // Published while the server is down: kept in the outbox (a committed transaction) until it is back.
          for (let seq = 5; seq < 10; seq++) await send(seq);
          await pause(2_000);
          await own.startServer();
          await waitFor(
            async () => (await orderedCount(consumer, own.pool)) >= 20,
            'after the outage',
            120_000,
          );
          await sub.stop();
          const sequences = await orderedSequences(consumer, own.pool);
          for (const seqs of sequences.values())
            expect(seqs).toEqual(Array.from({ length: 10 }, (_, i) => i));
        } finally {
          await own.bus.close().catch(() => undefined);
          await own.close();
        }
      },
      240_000,
    );

    /** A batch handler applying {key, seq} exactly once per batch into conformance_ordered; records batch sizes. */
    function orderedBatchEffect(
      consumer: string,
      sizes: number[],
      before?: (batch: readonly BusMessage[]) => void,
    ) {
      return async (batch: readonly BusMessage[], ctx: Parameters<Handler>[1]) => {
        sizes.push(batch.length);
        before?.(batch);
        const rows = batch.map((m) => ({ m, ...(JSON.parse(m.value) as { key: string; seq: number }) }));
        const idOf = (r: (typeof rows)[number]) => `${r.m.topic}/${r.key}/${r.seq}`;
        await applyOnceBatch(t.pool, consumer, rows.map(idOf), ctx, async (tx, fresh) => {
          const kept = rows.filter((r) => fresh.has(idOf(r)));
          await tx.query(
            `INSERT INTO conformance_ordered (consumer, key, seq)
             SELECT $1, k, s FROM unnest($2::text[], $3::int[]) WITH ORDINALITY AS t(k, s, i) ORDER BY i`,
            [consumer, kept.map((r) => r.key), kept.map((r) => r.seq)],
          );
        });
      };
    }

    it('batches: one partition per batch, at most maxBatch, every message once in per-key order', async () => {
      const name = await topic(3);
      const consumer = fresh('c');
      const keys = Array.from({ length: 9 }, (_, i) => `b-${i}`);
      await publishSequences(name, keys, 40);
      const sizes: number[] = [];
      const mixed: string[] = [];
      const group = fresh('g');
      const sub = await t.bus.subscribe({
        group,
        topics: [name],
        maxBatch: 25,
        batchHandler: orderedBatchEffect(consumer, sizes, (batch) => {
          const partitions = new Set(batch.map((m) => `${m.topic}/${m.partition}`));
          if (partitions.size !== 1) mixed.push([...partitions].join(','));
          for (let i = 1; i < batch.length; i++)
            if (batch[i]!.offset !== batch[i - 1]!.offset + 1n) mixed.push('not consecutive');
        }),
      });
      subscriptions.push(sub);
      await waitFor(async () => (await orderedCount(consumer)) >= 360, '360 effects');
      await pause(300);
      expect(await orderedCount(consumer)).toBe(360);
      expect(mixed).toEqual([]);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(25);
      expect(Math.max(...sizes)).toBeGreaterThan(1); // batches, not one message at a time
      for (const seqs of (await orderedSequences(consumer)).values())
        expect(seqs).toEqual(Array.from({ length: 40 }, (_, i) => i));
      await waitFor(async () => (await t.bus.lag(sub.group, [name])).every((p) => p.lag === 0n), 'lag 0');
      // Metrics are told of each committed call with its size: every message once, in batches.
      const { handled, failed, deadLettered } = reported(group, name);
      expect(handled.reduce((a, b) => a + b, 0)).toBe(360);
      expect(Math.max(...handled)).toBeLessThanOrEqual(25);
      expect(handled.length).toBeLessThan(360);
      expect({ failed, deadLettered }).toEqual({ failed: 0, deadLettered: 0 });
    });

    it("onDeadLetter records in the dead letter's transaction: a throw there rolls the dead letter back", async () => {
      const name = await topic(1);
      const group = fresh('g');
      const table = `conformance_dead_${randomBytes(4).toString('hex')}`;
      await t.pool.query(`CREATE TABLE ${table} (seq int, dlq_rows bigint)`);
      await publishSequences(name, ['k'], 3);
      let hookCalls = 0;
      const reasons: string[] = [];
      const applied: number[] = [];
      const sub = await t.bus.subscribe({
        group,
        topics: [name],
        maxAttempts: 1,
        handler: async (m) => {
          if (seqOf(m) === 1) throw new PoisonMessageError('seq 1 cannot be handled');
          applied.push(seqOf(m));
        },
        onDeadLetter: async (m, reason, tx) => {
          reasons.push(reason);
          // The first call fails after writing: nothing of that transaction (dead letter, position) stays.
          await tx.query(`INSERT INTO ${table} (seq) VALUES ($1)`, [seqOf(m)]);
          if (++hookCalls === 1) throw new Error('record failed');
        },
      });
      subscriptions.push(sub);
      const dead = await collect(deadLetterTopic(name), fresh('dlq'));
      await waitFor(() => applied.length >= 2 && dead.seen.length >= 1, 'applied and dead-lettered');
      await pause(300);
      expect(applied).toEqual([0, 2]);
      expect(hookCalls).toBe(2);
      // The handler's error, then (the first dead letter rolled back) the attempts that ended without one.
      expect(reasons).toEqual([
        'seq 1 cannot be handled',
        expect.stringContaining('ended without an outcome'),
      ]);
      expect(dead.seen.map(seqOf)).toEqual([1]); // once: the failed try left no dead letter
      const { rows } = await t.pool.query<{ seq: number }>(`SELECT seq FROM ${table}`);
      expect(rows.map((r) => r.seq)).toEqual([1]);
    });

    it('batches: a poison message is dead-lettered alone; the rest of its batch is applied once', async () => {
      const name = await topic(1);
      const consumer = fresh('c');
      await publishSequences(name, ['p'], 30);
      const sizes: number[] = [];
      let failedBatches = 0;
      const group = fresh('g');
      const sub = await t.bus.subscribe({
        group,
        topics: [name],
        maxBatch: 100,
        maxAttempts: 2,
        batchHandler: orderedBatchEffect(consumer, sizes, (batch) => {
          if (batch.some((m) => seqOf(m) === 17)) {
            failedBatches++;
            throw new PoisonMessageError('seq 17 cannot be handled');
          }
        }),
      });
      subscriptions.push(sub);
      const dead = await collect(deadLetterTopic(name), fresh('dlq'));
      await waitFor(
        async () => (await orderedCount(consumer)) >= 29 && dead.seen.length >= 1,
        'applied and dead-lettered',
      );
      await pause(300);
      expect((await orderedSequences(consumer)).get('p')).toEqual(
        Array.from({ length: 30 }, (_, i) => i).filter((i) => i !== 17),
      );
      expect(dead.seen.map(seqOf)).toEqual([17]);
      expect(dead.seen[0]!.headers[DLQ_HEADERS.error]).toBe('seq 17 cannot be handled');
      expect(sizes[0]).toBe(30); // tried whole first
      expect(failedBatches).toBe(2); // the whole batch, then seq 17 alone (poison: no retry)
      // What metrics are told: 29 messages handled one by one, two failed calls, one dead letter.
      expect(reported(group, name)).toEqual({ handled: Array(29).fill(1), failed: 2, deadLettered: 1 });
    });

    it('valuesOnly: every message delivered in order, one passed over perhaps without its value; dead-lettered whole', async () => {
      const name = await topic(1);
      const other = await topic(1);
      // seq % 3: 0 a kind the consumer uses, 1 a kind it passes over, 2 no kind header at all.
      const kindOf = (seq: number): Record<string, string> =>
        [{ kind: 'used' }, { kind: 'passed' }, {}][seq % 3]!;
      const valueOf = (seq: number) => JSON.stringify({ key: 'v', seq, padding: 'x'.repeat(100) });
      for (let seq = 0; seq < 12; seq++)
        await t.bus.publish(name, [
          { key: 'v', value: valueOf(seq), headers: { ...kindOf(seq), seq: String(seq) } },
        ]);
      await t.bus.publish(other, [{ key: 'v', value: valueOf(1), headers: { kind: 'passed', seq: '1' } }]);
      const seen: BusMessage[] = [];
      const sub = await t.bus.subscribe({
        group: fresh('g'),
        topics: [name, other],
        maxAttempts: 1,
        valuesOnly: { topic: name, header: 'kind', values: ['used'] },
        batchHandler: async (batch) => {
          for (const m of batch) {
            // Seq 4 is passed over by kind, yet its handling fails: it must reach the dead letters whole.
            if (m.topic === name && m.headers.seq === '4') throw new PoisonMessageError('seq 4 fails');
          }
          seen.push(...batch);
        },
      });
      subscriptions.push(sub);
      const dead = await collect(deadLetterTopic(name), fresh('dlq'));
      await waitFor(
        () => seen.length >= 12 && dead.seen.length >= 1,
        'every message delivered or dead-lettered',
      );
      await pause(300);
      const ofName = seen.filter((m) => m.topic === name);
      expect(ofName.map((m) => Number(m.headers.seq))).toEqual([0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11]);
      for (const m of ofName) {
        const seq = Number(m.headers.seq);
        const omitted = t.omitsValues === true && kindOf(seq).kind === 'passed';
        expect(m.value).toBe(omitted ? '' : valueOf(seq));
      }
      // Another topic, a header of the same name: valuesOnly names one topic only.
      expect(seen.filter((m) => m.topic === other).map((m) => m.value)).toEqual([valueOf(1)]);
      expect(dead.seen.map((m) => m.value)).toEqual([valueOf(4)]);
    });

    it('batches: a batch that fails (transient) is applied message by message, effects once, order kept', async () => {
      const name = await topic(1);
      const consumer = fresh('c');
      await publishSequences(name, ['q'], 20);
      const sizes: number[] = [];
      let failures = 0;
      const sub = await t.bus.subscribe({
        group: fresh('g'),
        topics: [name],
        maxBatch: 50,
        batchHandler: async (batch, ctx) => {
          // Effects written, then the transaction fails: nothing of the batch may remain.
          await orderedBatchEffect(consumer, sizes)(batch, {
            ...ctx,
            commitIn: async (tx) => {
              await ctx.commitIn(tx);
              if (batch.length > 1 && failures++ === 0) throw new Error('connection lost before commit');
            },
          });
        },
      });
      subscriptions.push(sub);
      await waitFor(async () => (await orderedCount(consumer)) >= 20, '20 effects');
      await pause(300);
      expect(failures).toBe(1);
      expect((await orderedSequences(consumer)).get('q')).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(sizes.slice(0, 2)).toEqual([20, 1]); // whole, then one by one
    });

    it('batches: the commit records the next batch try; a clean stop takes it back, a killed member leaves it', async () => {
      const name = await topic(1);
      const group = fresh('g');
      const consumer = fresh('c');
      const position = async () =>
        (
          await t.pool.query<{ next_offset: string; attempt_offset: string | null; attempt_batch: boolean }>(
            'SELECT next_offset, attempt_offset, attempt_batch FROM bus_group_offsets WHERE group_id = $1',
            [group],
          )
        ).rows[0];
      const run = async (sizes: number[]) => {
        const sub = await t.bus.subscribe({
          group,
          topics: [name],
          maxBatch: 100,
          batchHandler: orderedBatchEffect(consumer, sizes),
        });
        subscriptions.push(sub);
        return sub;
      };

      const publishRun = (from: number, to: number) =>
        t.bus.publish(
          name,
          Array.from({ length: to - from }, (_, i) => ({
            key: 'r',
            value: JSON.stringify({ key: 'r', seq: from + i }),
          })),
        );
      await publishRun(0, 10);
      const first: number[] = [];
      const sub = await run(first);
      await waitFor(async () => (await orderedCount(consumer)) >= 10, '10 effects');
      // Committed at 10 with the try of the batch from 10 on record: a crash in it is known to the next member.
      expect(await position()).toEqual({ next_offset: '10', attempt_offset: '10', attempt_batch: true });
      // This member knows that record for its own: the next batch is tried whole, not one by one.
      await publishRun(10, 20);
      await waitFor(async () => (await orderedCount(consumer)) >= 20, '20 effects');
      expect(first).toEqual([10, 10]);
      await sub.stop();
      expect(await position()).toEqual({ next_offset: '20', attempt_offset: null, attempt_batch: false });

      // After a clean stop the next member tries its first batch whole.
      await publishRun(20, 30);
      const second: number[] = [];
      const again = await run(second);
      await waitFor(async () => (await orderedCount(consumer)) >= 30, '30 effects');
      await again.stop();
      expect(second[0]).toBe(10);

      // What a member killed after a commit leaves (no stop to take the try back): one by one next time.
      await t.pool.query(
        `UPDATE bus_group_offsets SET attempt_offset = next_offset, attempts = 1, attempt_batch = true
         WHERE group_id = $1`,
        [group],
      );
      await publishRun(30, 35);
      const third: number[] = [];
      await run(third);
      await waitFor(async () => (await orderedCount(consumer)) >= 35, '35 effects');
      expect(third.slice(0, 5)).toEqual([1, 1, 1, 1, 1]);
      expect((await orderedSequences(consumer)).get('r')).toEqual(Array.from({ length: 35 }, (_, i) => i));
    });

    it('subscribe() refuses options with both or neither of handler and batchHandler', async () => {
      const name = await topic(1);
      await expect(t.bus.subscribe({ group: fresh('g'), topics: [name] })).rejects.toThrow(/exactly one/);
      await expect(
        t.bus.subscribe({
          group: fresh('g'),
          topics: [name],
          handler: async () => undefined,
          batchHandler: async () => undefined,
        }),
      ).rejects.toThrow(/exactly one/);
    });

    it('reports consumer lag per partition', async () => {
      const name = await topic(2);
      const group = fresh('g');
      await publishSequences(name, ['a', 'b', 'c'], 2);
      const before = await t.bus.lag(group, [name]);
      expect(before.reduce((s, p) => s + p.lag, 0n)).toBe(6n);
      const { seen } = await collect(name, group);
      await waitFor(() => seen.length >= 6, '6 messages');
      await waitFor(async () => (await t.bus.lag(group, [name])).every((p) => p.lag === 0n), 'lag 0');
    });
  });
}
