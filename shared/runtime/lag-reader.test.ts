import { describe, expect, it } from 'vitest';
import type { EventBus, PartitionLag } from '../bus/port.js';
import { createLogger } from '../logging/logger.js';
import { crashOutcome } from '../bus/kafka/kafka-subscription.js';
import { LagReader } from './lag-reader.js';
import { createMetrics } from './metrics.js';
import { pipelineHealth } from './pipeline-health.js';

const log = createLogger({ level: 'silent' });

/** A bus whose lag answers after `delayMs`, or never while `down`. */
function fakeBus() {
  const state = { down: false, delayMs: 20, reads: 0 };
  const bus = {
    lag: async (group: string, topics: readonly string[]): Promise<PartitionLag[]> => {
      state.reads++;
      if (state.down) return new Promise<never>(() => undefined);
      await new Promise((r) => setTimeout(r, state.delayMs));
      return topics.map((topic) => ({ group, topic, partition: 0, lag: 5n, end: 5n }));
    },
  } as unknown as EventBus;
  return { bus, state };
}

describe('consumer lag read off the scrape path', () => {
  it('answers with the last figures within its wait while the bus does not answer, and says so on /health', async () => {
    let now = 1_000_000;
    const { bus, state } = fakeBus();
    const reader = new LagReader(
      () => bus,
      log,
      { waitMs: 100, staleMs: 5_000 },
      () => now,
    );
    reader.track('classifier', ['chain.events']);
    expect(await reader.lags()).toHaveLength(1);
    expect(await reader.health()).toEqual({ status: 'ok' });

    state.down = true;
    now += 2_000; // past freshMs: the next scrape reads again
    let started = performance.now();
    expect(await reader.lags()).toHaveLength(1); // the last figures
    expect(performance.now() - started).toBeLessThan(1_000);
    // A read in flight is shared, never one per scrape.
    const reads = state.reads;
    await Promise.all([reader.lags(), reader.lags(), reader.lags()]);
    expect(state.reads).toBe(reads);
    // A read that never ends is the bus not answering too, once it has waited staleMs.
    expect((await reader.health()).status).toBe('ok');
    now += 6_000;
    expect(await reader.health()).toEqual({
      status: 'degraded',
      error: 'the event bus does not answer: a read has been waiting for 6 s',
      lastAnsweredSecondsAgo: 8,
    });

    // A hung read is not a failure until it ends; a failed one is.
    state.down = false;
    (bus as { lag: unknown }).lag = async () => {
      state.reads++;
      throw Object.assign(new Error('connection to broker.internal:9092 refused'), {
        name: 'KafkaJSNumberOfRetriesExceeded',
      });
    };
    // The hung read never ends here: a new reader stands for the process after it.
    const failing = new LagReader(
      () => bus,
      log,
      { waitMs: 100, staleMs: 5_000 },
      () => now,
    );
    failing.track('classifier', ['chain.events']);
    started = performance.now();
    expect(await failing.health()).toEqual({
      status: 'degraded',
      // The error's class, not its text (/health is public; the text, naming hosts, is logged).
      error:
        "the event bus does not answer: failed (KafkaJSNumberOfRetriesExceeded); the service's log has the details",
      lastAnsweredSecondsAgo: null,
    });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('keeps ok through a failure shorter than staleMs after an answer', async () => {
    let now = 1_000_000;
    let fail = false;
    const bus = {
      lag: async (group: string) => {
        if (fail) throw new Error('refused');
        return [{ group, topic: 't', partition: 0, lag: 1n }];
      },
    } as unknown as EventBus;
    const reader = new LagReader(
      () => bus,
      log,
      { waitMs: 100, staleMs: 5_000 },
      () => now,
    );
    reader.track('g', ['t']);
    await reader.lags();
    fail = true;
    now += 2_000;
    expect((await reader.health()).status).toBe('ok');
    now += 4_000;
    expect(await reader.health()).toMatchObject({ status: 'degraded', lastAnsweredSecondsAgo: 6 });
  });

  it('a scrape overlapping another, or the dashboard, gets every group', async () => {
    const { bus } = fakeBus();
    const metrics = createMetrics(() => bus, log);
    for (const g of ['classifier', 'points', 'notifier', 'agent-submitter'])
      metrics.trackConsumerGroup(g, ['t']);
    const series = (text: string) => text.split('\n').filter((l) => l.startsWith('bus_consumer_lag{')).length;
    const scrape = metrics.registry.metrics();
    await new Promise((r) => setTimeout(r, 30));
    const [text, health] = await Promise.all([scrape, pipelineHealth(metrics.registry)]);
    expect(series(text)).toBe(4);
    expect(health.consumers.map((c) => c.group).sort()).toEqual([
      'agent-submitter',
      'classifier',
      'notifier',
      'points',
    ]);
  });
});

describe('a consumer that stopped for good', () => {
  it('makes /health unavailable (503: only a restart helps), naming the group and why', async () => {
    const { bus } = fakeBus();
    let stopped: Array<{ group: string; error: string }> = [];
    (bus as { stoppedSubscriptions?: () => typeof stopped }).stoppedSubscriptions = () => stopped;
    const reader = new LagReader(() => bus, log, { waitMs: 100 });
    reader.track('points', ['swap.verdicts']);
    expect(await reader.health()).toEqual({ status: 'ok' });
    stopped = [{ group: 'points', error: 'The group member needs to have a valid member id' }];
    expect(await reader.health()).toEqual({
      status: 'unavailable',
      error:
        'consumer group points stopped (The group member needs to have a valid member id): restart the service',
      stoppedGroups: ['points'],
    });
  });

  it('a kafkajs crash it restarts from is not one; one it does not restart from is; none while stopping', () => {
    const error = { message: 'boom' };
    expect(crashOutcome({ error, restart: true }, false)).toBe('restarting');
    expect(crashOutcome({ error, restart: false }, false)).toBe('stopped');
    expect(crashOutcome({ error, restart: false }, true)).toBe('ignored');
  });
});
