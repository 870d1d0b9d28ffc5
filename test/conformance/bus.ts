import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../shared/db/pool.js';
import {
  DLQ_HEADERS,
  PoisonMessageError,
  applyOnce,
  deadLetterTopic,
  type BusMessage,
  type EventBus,
  type Subscription,
} from '../../shared/bus/index.js';
import { waitFor } from '../support/wait.js';

export interface BusUnderTest {
  bus: EventBus;
  /** PostgreSQL where consumers write their effects (and, on the postgres log, the bus itself). */
  pool: Pool;
  cleanup(): Promise<void>;
}

/**
 * The contract every EventBus adapter must meet. Each test uses its own topics and groups, so the suite
 * can share one broker or database.
 */
export function busConformanceSuite(
  name: string,
  make: () => Promise<BusUnderTest>,
  options: { skip?: string } = {},
) {
  const suite = options.skip ? describe.skip : describe;
  suite(`EventBus conformance: ${name}`, () => {
    let t: BusUnderTest;
    const subscriptions: Subscription[] = [];

    beforeAll(async () => {
      t = await make();
      await t.pool.query(
        'CREATE TABLE IF NOT EXISTS conformance_effects (id bigserial, event_id text, key text)',
      );
    });
    afterAll(async () => {
      await Promise.all(subscriptions.map((s) => s.stop()));
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
      topicName: string,
      group: string,
      handle?: (m: BusMessage, attempt: number) => Promise<void>,
      extra: { startFrom?: 'earliest' | 'latest'; maxAttempts?: number } = {},
    ) {
      const seen: BusMessage[] = [];
      const sub = await t.bus.subscribe({
        group,
        topics: [topicName],
        ...extra,
        handler: async (m, ctx) => {
          await handle?.(m, ctx.attempt);
          seen.push(m);
        },
      });
      subscriptions.push(sub);
      return { seen, sub };
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
