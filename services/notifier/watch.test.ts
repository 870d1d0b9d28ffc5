import { describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { createMetrics } from '../../shared/runtime/metrics.js';
import { HealthWatch } from './watch.js';

describe('HealthWatch: dead letters', () => {
  it('notifies once per look that finds more dead letters of a group and topic, with how many are new', async () => {
    // The registry a service process has, told by the bus's delivery observer.
    const metrics = createMetrics(() => undefined, createLogger({ level: 'silent' }));
    const watch = new HealthWatch(metrics.registry);
    const at = (s: number) => s * 1_000;

    metrics.observer.handled('points', 'swap.verdicts', 40);
    expect(await watch.look(at(100))).toEqual([]);

    metrics.observer.deadLettered('points', 'swap.verdicts');
    metrics.observer.deadLettered('points', 'swap.verdicts');
    expect(await watch.look(at(101))).toEqual([
      {
        id: 'message_dead_lettered:points:swap.verdicts:2:101',
        kind: 'message_dead_lettered',
        payload: {
          group: 'points',
          topic: 'swap.verdicts',
          deadLetterTopic: 'swap.verdicts.dlq',
          new: 2,
          count: 2,
        },
      },
    ]);
    // Nothing new: nothing again; failures that were retried are no dead letters.
    metrics.observer.failed('points', 'swap.verdicts');
    expect(await watch.look(at(102))).toEqual([]);

    metrics.observer.deadLettered('classifier', 'chain.events');
    metrics.observer.deadLettered('points', 'swap.verdicts');
    const next = await watch.look(at(103));
    expect(next.map((n) => [n.id, (n.payload as { new: number }).new])).toEqual([
      ['message_dead_lettered:points:swap.verdicts:3:103', 1],
      ['message_dead_lettered:classifier:chain.events:1:103', 1],
    ]);
  });

  it('a restarted process counts from zero: a new dead letter is told again, under a new id', async () => {
    const first = createMetrics(() => undefined, createLogger({ level: 'silent' }));
    const before = await new HealthWatch(first.registry).look(0);
    expect(before).toEqual([]);
    first.observer.deadLettered('agent-submitter', 'complaint.commands');
    const [told] = await new HealthWatch(first.registry).look(5_000);
    // After a restart: a new registry and watch, the same count for another message.
    const second = createMetrics(() => undefined, createLogger({ level: 'silent' }));
    second.observer.deadLettered('agent-submitter', 'complaint.commands');
    const [again] = await new HealthWatch(second.registry).look(9_000);
    expect(told!.id).not.toBe(again!.id);
    expect(again!.payload).toMatchObject({ new: 1, count: 1 });
  });
});
