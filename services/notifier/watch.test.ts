import { Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { laggingGroup } from './test-harness.js';
import {
  DEFAULT_LIMITS,
  deadLettersSoFar,
  HealthWatch,
  toldOf,
  type DeadLetterCount,
  type ToldDeadLetters,
} from './watch.js';

/** A look whose notifications all reached the outbox. */
async function told(watch: HealthWatch, nowMs?: number) {
  const due = await watch.look(nowMs);
  for (const d of due) d.commit();
  return due.map((d) => d.notification);
}

describe('HealthWatch: dead-letter topics', () => {
  it('tells each new total of a dead-letter topic once, under an id made of the topic and the total', async () => {
    let totals = [
      { topic: 'swap.verdicts', total: 0 },
      { topic: 'chain.events', total: 0 },
    ];
    const watch = new HealthWatch(new Registry(), DEFAULT_LIMITS, async () => totals);
    expect(await told(watch)).toEqual([]);

    totals = [
      { topic: 'swap.verdicts', total: 2 },
      { topic: 'chain.events', total: 0 },
    ];
    expect(await told(watch)).toEqual([
      {
        id: 'message_dead_lettered:swap.verdicts.dlq:2',
        kind: 'message_dead_lettered',
        payload: { topic: 'swap.verdicts', deadLetterTopic: 'swap.verdicts.dlq', total: 2 },
      },
    ]);
    expect(await told(watch)).toEqual([]); // the same total: nothing again

    totals = [
      { topic: 'swap.verdicts', total: 3 },
      { topic: 'chain.events', total: 1 },
    ];
    expect((await told(watch)).map((n) => n.id)).toEqual([
      'message_dead_lettered:swap.verdicts.dlq:3',
      'message_dead_lettered:chain.events.dlq:1',
    ]);
  });

  it('a restarted watch tells the standing totals again under the same ids (the outbox keeps one of each)', async () => {
    const totals = async () => [{ topic: 'complaint.commands', total: 4 }];
    const first = await told(new HealthWatch(new Registry(), DEFAULT_LIMITS, totals));
    const afterRestart = await told(new HealthWatch(new Registry(), DEFAULT_LIMITS, totals));
    expect(afterRestart).toEqual(first);
  });

  it('a cleared dead-letter topic (deleted, created again: Kafka counts from 0) tells its new dead letters in a new epoch', async () => {
    let total = 1;
    const totals = async () => [{ topic: 'chain.events', total }];
    const told_: ToldDeadLetters[] = [];
    const watch = new HealthWatch(new Registry(), DEFAULT_LIMITS, totals);
    const ids = async (w: HealthWatch) => (await told(w)).map((n) => n.id);
    expect(await ids(watch)).toEqual(['message_dead_lettered:chain.events.dlq:1']);
    total = 2;
    expect(await ids(watch)).toEqual(['message_dead_lettered:chain.events.dlq:2']);
    total = 0; // the operator cleared it: told with total 0, the row a restarted watch reads
    const cleared = await told(watch);
    expect(cleared.map((n) => n.id)).toEqual(['message_dead_lettered:chain.events.dlq:1.0']);
    expect(cleared[0]!.payload).toMatchObject({ total: 0, clearedTimes: 1 });
    expect(await ids(watch)).toEqual([]);
    total = 1;
    expect(await ids(watch)).toEqual(['message_dead_lettered:chain.events.dlq:1.1']);
    total = 2;
    const second = await told(watch);
    expect(second.map((n) => n.id)).toEqual(['message_dead_lettered:chain.events.dlq:1.2']);
    expect(second[0]!.payload).toMatchObject({ total: 2, clearedTimes: 1 });
    // A restarted watch starts from what the outbox says was told last: nothing again, and the epoch goes on.
    told_.push(toldOf(second[0]!.id)!);
    const restarted = new HealthWatch(new Registry(), DEFAULT_LIMITS, totals, undefined, async (dlq) =>
      dlq === 'chain.events.dlq' ? told_.at(-1) : undefined,
    );
    expect(await ids(restarted)).toEqual([]);
    total = 3;
    expect(await ids(restarted)).toEqual(['message_dead_lettered:chain.events.dlq:1.3']);
    // Cleared while it was down, with one new dead letter since.
    total = 1;
    const later = new HealthWatch(new Registry(), DEFAULT_LIMITS, totals, undefined, async () => ({
      epoch: 1,
      total: 3,
    }));
    expect(await ids(later)).toEqual(['message_dead_lettered:chain.events.dlq:2.1']);
  });

  it('a clear seen before a restart: new dead letters that reach the old total are told after it', async () => {
    let total = 5;
    const totals = async () => [{ topic: 'chain.events', total }];
    // The outbox as lastToldDeadLetters reads it: the newest told id of the topic.
    let newest: ToldDeadLetters | undefined;
    const look = async (w: HealthWatch) => {
      const notes = await told(w);
      for (const n of notes) newest = toldOf(n.id);
      return notes.map((n) => n.id);
    };
    const lastTold = async () => newest;
    const first = new HealthWatch(new Registry(), DEFAULT_LIMITS, totals, undefined, lastTold);
    expect(await look(first)).toEqual(['message_dead_lettered:chain.events.dlq:5']);
    total = 0;
    expect(await look(first)).toEqual(['message_dead_lettered:chain.events.dlq:1.0']);
    total = 5;
    const restarted = new HealthWatch(new Registry(), DEFAULT_LIMITS, totals, undefined, lastTold);
    expect(await look(restarted)).toEqual(['message_dead_lettered:chain.events.dlq:1.5']);
  });

  it('a failed read of the dead-letter topics skips only them: the alerts read from the registry are told', async () => {
    const registry = laggingGroup();
    let fail = true;
    const unread: string[] = [];
    const watch = new HealthWatch(
      registry,
      DEFAULT_LIMITS,
      async () => {
        if (fail) throw new Error('broker unreachable');
        return [{ topic: 'swap.verdicts', total: 2 }];
      },
      (err) => unread.push(err.message),
    );
    expect((await told(watch, 7_000)).map((n) => n.id)).toEqual(['consumer_lagging:points:7']);
    expect(unread).toEqual(['broker unreachable']);
    fail = false;
    // The dead letters are told once the read works again; the lagging group was told already.
    expect((await told(watch, 8_000)).map((n) => n.id)).toEqual([
      'message_dead_lettered:swap.verdicts.dlq:2',
    ]);
  });

  it('a notification whose write failed (not committed) is offered again at the next look', async () => {
    const registry = laggingGroup();
    const watch = new HealthWatch(registry, DEFAULT_LIMITS, async () => [
      { topic: 'swap.verdicts', total: 2 },
    ]);
    expect((await watch.look(7_000)).map((d) => d.notification.id)).toEqual([
      'consumer_lagging:points:7',
      'message_dead_lettered:swap.verdicts.dlq:2',
    ]);
    // Nothing committed: both again (the episode under the time of the look that tells it).
    expect((await told(watch, 8_000)).map((n) => n.id)).toEqual([
      'consumer_lagging:points:8',
      'message_dead_lettered:swap.verdicts.dlq:2',
    ]);
    expect(await told(watch, 9_000)).toEqual([]);
  });
});

describe('HealthWatch: dead letters over every level', () => {
  it('counts what arrived in each level, not what a redrive sent back up a level', () => {
    // 2 dead letters; `redrive X` refused 1 (to X.dlq.dlq); `redrive X.dlq` sent it back to X.dlq.
    expect(deadLettersSoFar([2, 0, 0], [0, 0, 0])).toBe(2);
    expect(deadLettersSoFar([2, 1, 0], [0, 0, 0])).toBe(3);
    expect(deadLettersSoFar([3, 1, 0], [0, 1, 0])).toBe(3);
    // `redrive X.dlq` refused it instead (to X.dlq.dlq.dlq): a dead letter of that redrive.
    expect(deadLettersSoFar([2, 1, 1], [0, 1, 0])).toBe(4);
    // A redrive in flight (its position committed, the message not sent back yet) counts less, never more.
    expect(deadLettersSoFar([2, 1, 0], [0, 1, 0])).toBe(2);
  });

  it('a total lower than told with no dead-letter topic cleared (a redrive in flight) tells nothing', async () => {
    const levels = (a: number, b: number) => ({ 'X.dlq': a, 'X.dlq.dlq': b, 'X.dlq.dlq.dlq': 0 });
    let count: DeadLetterCount = { topic: 'X', total: 3, levels: levels(2, 1) };
    const watch = new HealthWatch(new Registry(), DEFAULT_LIMITS, async () => [count]);
    const ids = async () => (await told(watch)).map((n) => n.id);
    expect(await ids()).toEqual(['message_dead_lettered:X.dlq:3']);
    count = { topic: 'X', total: 2, levels: levels(2, 1) }; // taken from X.dlq.dlq, not in X.dlq yet
    expect(await ids()).toEqual([]);
    count = { topic: 'X', total: 3, levels: levels(3, 1) }; // arrived back in X.dlq
    expect(await ids()).toEqual([]);
    count = { topic: 'X', total: 4, levels: levels(4, 1) };
    expect(await ids()).toEqual(['message_dead_lettered:X.dlq:4']);
    // X.dlq cleared by an operator: a new epoch.
    count = { topic: 'X', total: 1, levels: levels(0, 1) };
    expect(await ids()).toEqual(['message_dead_lettered:X.dlq:1.1']);
  });

  it('a restarted watch measures a clear from the levels it told last', async () => {
    const count = { topic: 'X', total: 1, levels: { 'X.dlq': 0, 'X.dlq.dlq': 1 } };
    const lastTold = async () => ({ epoch: 0, total: 3, levels: { 'X.dlq': 2, 'X.dlq.dlq': 1 } });
    const restarted = new HealthWatch(
      new Registry(),
      DEFAULT_LIMITS,
      async () => [count],
      undefined,
      lastTold,
    );
    expect((await told(restarted)).map((n) => n.id)).toEqual(['message_dead_lettered:X.dlq:1.1']);
  });
});

describe('HealthWatch: episodes', () => {
  it('a figure hovering at its limit is one episode; one false for clearAfterSeconds ends it', async () => {
    const registry = new Registry();
    const lag = new Gauge({
      name: 'bus_consumer_lag',
      help: 't',
      labelNames: ['group'],
      registers: [registry],
    });
    const watch = new HealthWatch(registry);
    const ids: string[] = [];
    let now = 0;
    const look = async (value: number) => {
      lag.set({ group: 'points' }, value);
      ids.push(...(await told(watch, now)).map((n) => n.id));
      now += 10_000;
    };
    for (let i = 0; i < 10; i++) await look(i % 2 === 0 ? 1_001 : 999);
    expect(ids).toEqual(['consumer_lagging:points:0']);
    // Below the limit for clearAfterSeconds: the episode ends, and a new one is told.
    const clearLooks = DEFAULT_LIMITS.clearAfterSeconds / 10 + 1;
    for (let i = 0; i < clearLooks; i++) await look(10);
    await look(5_000);
    expect(ids).toEqual(['consumer_lagging:points:0', `consumer_lagging:points:${(now - 10_000) / 1000}`]);
  });

  it('a lagging consumer group is told as consumer_lagging, apart from a lagging Connector', async () => {
    const [note] = await told(new HealthWatch(laggingGroup()), 7_000);
    expect(note).toMatchObject({
      kind: 'consumer_lagging',
      payload: { group: 'points', lagMessages: 5_000 },
    });
  });
});
