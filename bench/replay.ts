import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createClassifier, subscribeEngine, watchedChains } from '../services/classifier/index.js';
import { classifierMigrations } from '../services/classifier/migrations.js';
import { replayClassifier } from '../services/classifier/replay.js';
import {
  BENCH_LOCK_ATTACKS_ONE_IN,
  startSyntheticDidSupport,
  swapSpecs,
  SYNTHETIC_CHAIN_CLIENTS,
} from '../services/classifier/synthetic-deployment.js';
import { publishTraffic, swapTraffic } from '../services/classifier/swap-traffic.js';
import { classifierTables } from '../services/classifier/tables.js';
import { POINTS_GROUP, POINTS_TOPICS, subscribePoints } from '../services/points/consumer.js';
import { pointsMigrations } from '../services/points/migrations.js';
import { replayPoints } from '../services/points/replay.js';
import { PointsStore } from '../services/points/store.js';
import { PostgresBus } from '../shared/bus/postgres/postgres-bus.js';
import type { EventBus } from '../shared/bus/port.js';
import { createLogger } from '../shared/logging/logger.js';
import { allTopics, topicSpec } from '../topics/index.js';
import { progressBar } from '../bin/progress.js';
import { fmt, printTable, rate, scratchDatabase } from './support.js';

/** About four chain events per swap: 250,000 swaps are the issue's million events. */
const SWAPS = Number(process.env.BENCH_REPLAY_SWAPS ?? 250_000);
const TARGET_SECONDS = 120;
/** BENCH_REPLAY_RUNS=n: the replay n times over the same log, the fastest counted (each is compared with live). */
const RUNS = Number(process.env.BENCH_REPLAY_RUNS ?? 1);

/**
 * `npm run bench -- replay`: the whole pipeline's replay (classifier and points at once: what `npm run replay`
 * does) over synthetic swaps of every case, after a live run of the same messages, with both replays
 * compared row by row with the live tables. The figure is the replay's time; the live run beside it is the
 * baseline (same messages, same database, same run).
 */
export async function run() {
  const database = await scratchDatabase([classifierMigrations, pointsMigrations]);
  const { pool, url } = database;
  const log = createLogger({ level: 'warn' });
  const did = await startSyntheticDidSupport();
  const didUrl = did.url;
  const bus = new PostgresBus({ pool, connectionString: url, log });
  try {
    await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 8)));
    const generated = await time(async () => swapTraffic(swapSpecs(SWAPS, 11, BENCH_LOCK_ATTACKS_ONE_IN)));
    const traffic = generated.value;
    const messages = traffic.streams.reduce((n, s) => n + s.length, 0);
    const published = await time(async () => {
      const bar = progressBar('publishing');
      await publishTraffic(bus, traffic, 5_000, (done) => bar.update(messages - done, done));
    });
    traffic.streams.length = 0; // the messages are in the log now; free the memory

    const chainClients = SYNTHETIC_CHAIN_CLIENTS;

    // Baseline: the live pipeline on the same messages (classifier publishing verdicts, points on them).
    const live = await time(async () => {
      const { engine, did: didSource } = createClassifier({
        pool,
        tables: classifierTables(),
        group: 'classifier',
        chains: watchedChains(chainClients),
        didSupportUrl: didUrl,
        didCacheMs: 3_600_000,
        bus,
        log,
      });
      const classifier = await subscribeEngine(bus, engine, { group: 'classifier' });
      const points = await subscribePoints({ bus, pool, store: new PointsStore(pool) });
      const bar = progressBar('live run');
      const decided = async () =>
        Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM classifier_verdicts`)).rows[0]!.n);
      for (;;) {
        const n = await decided();
        bar.update(SWAPS - n, n);
        if (n >= SWAPS && (await lagOf(bus, POINTS_GROUP, POINTS_TOPICS)) === 0) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      await classifier.stop();
      await points.stop();
      didSource.stop();
    });

    // As `npm run replay` in its own process: it knows only what it loads (the live run's saved signer memo).
    // BENCH_PROFILE=<file>: a CPU profile of the replay alone (open it in Chrome's DevTools).
    const profiler = process.env.BENCH_PROFILE ? await startProfiler() : undefined;
    const replay = await fastestOf(RUNS, async () => {
      // Independent (points rebuilds from the live verdict topics): both at once, as `npm run replay` does.
      const bar = progressBar('replay (classifier + points)');
      const left = { classifier: 0, points: 0 };
      const done = { classifier: 0, points: 0 };
      let pointsTotal = 0;
      const draw = () => bar.update(left.classifier + left.points, done.classifier + done.points);
      const [classifier, points] = await Promise.all([
        replayClassifier({
          pool,
          bus,
          chainClients,
          didSupportUrl: didUrl,
          log,
          onProgress: (d, l) => {
            done.classifier = d;
            left.classifier = l;
            draw();
          },
        }),
        replayPoints({
          db: pool,
          bus,
          log,
          keep: false,
          onProgress: (l) => {
            pointsTotal = Math.max(pointsTotal, l);
            left.points = l;
            done.points = pointsTotal - l;
            draw();
          },
        }),
      ]);
      return { classifier, points };
    });
    if (profiler) writeFileSync(process.env.BENCH_PROFILE!, JSON.stringify(await profiler.stop()));
    const identical = replay.value.classifier.identical && replay.value.points.identical;
    if (!identical) {
      console.error(JSON.stringify(replay.value.classifier, null, 2));
      console.error(replay.value.points.lines.join('\n'));
    }

    const seconds = replay.ms / 1_000;
    const eventsPerSecond = rate(traffic.events, replay.ms);
    const million = 1_000_000 / eventsPerSecond;
    const measured = traffic.events >= 1_000_000;
    const title = `replay (${fmt(SWAPS)} swaps: ${fmt(traffic.events)} chain events + ${fmt(messages - traffic.events)} heights; ${database.source}${RUNS > 1 ? `; fastest of ${RUNS} replays` : ''})`;
    printTable(title, [
      [
        'generated, published',
        `${(generated.ms / 1_000).toFixed(1)} s, ${fmt(rate(messages, published.ms))} msg/s`,
      ],
      [
        'baseline: live pipeline (classifier + points)',
        `${(live.ms / 1_000).toFixed(1)} s = ${fmt(rate(traffic.events, live.ms))} chain events/s`,
      ],
      [
        'replay: classifier and points at once, compared with live',
        `${seconds.toFixed(1)} s = ${fmt(eventsPerSecond)} chain events/s = ${(live.ms / replay.ms).toFixed(2)}x live, ${identical ? 'IDENTICAL' : 'DIFFERENT'}`,
      ],
      ['where the replay time went (s)', phasesText(replay.value)],
      [
        '1,000,000 chain events',
        `${million.toFixed(0)} s ${measured ? '(measured)' : '(at the rate above)'} (target < ${TARGET_SECONDS} s)`,
      ],
    ]);
    if (!identical) process.exitCode = 1;
    return [
      {
        title,
        rows: [
          {
            measure: 'live pipeline: classifier + points (baseline)',
            value: `${(live.ms / 1_000).toFixed(1)} s (${fmt(rate(traffic.events, live.ms))} chain events/s)`,
          },
          {
            measure: `replay: classifier and points at once, ${identical ? 'identical to' : 'DIFFERENT from'} the live tables`,
            value: `${seconds.toFixed(1)} s (${fmt(eventsPerSecond)} chain events/s)`,
            baseline: `${(live.ms / 1_000).toFixed(1)} s (live run)`,
            ratio: live.ms / replay.ms,
          },
          {
            measure: 'where the replay time went, in seconds (classifier and points run at once)',
            value: phasesText(replay.value),
          },
          {
            measure: `1,000,000 chain events ${measured ? '(measured)' : '(at the replay rate above)'}: target ${TARGET_SECONDS} s ÷ time`,
            value: `${million.toFixed(0)} s`,
            baseline: `${TARGET_SECONDS} s`,
            ratio: TARGET_SECONDS / million,
            target: 1,
          },
        ],
      },
    ];
  } finally {
    await bus.close();
    await did.close();
    await database.dispose();
  }
}

/** The fastest of `runs` replays, unless one is not identical to live: that one is the result. */
async function fastestOf<
  T extends {
    classifier: { identical: boolean; phases: Record<string, number> };
    points: { identical: boolean; phases: Record<string, number> };
  },
>(runs: number, replay: () => Promise<T>): Promise<{ value: T; ms: number }> {
  let fastest: { value: T; ms: number } | undefined;
  for (let i = 0; i < runs; i++) {
    const run = await time(replay);
    if (runs > 1)
      console.log(`replay ${i + 1} of ${runs}: ${(run.ms / 1_000).toFixed(1)} s (${phasesText(run.value)})`);
    if (!run.value.classifier.identical || !run.value.points.identical) return run;
    if (!fastest || run.ms < fastest.ms) fastest = run;
  }
  return fastest!;
}

function phasesText(value: {
  classifier: { phases: Record<string, number> };
  points: { phases: Record<string, number> };
}): string {
  const text = (phases: Record<string, number>) =>
    Object.entries(phases)
      .map(([name, s]) => `${name} ${s.toFixed(1)}`)
      .join(', ');
  return `classifier: ${text(value.classifier.phases)}; points: ${text(value.points.phases)}`;
}

async function startProfiler() {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      return profile;
    },
  };
}

async function lagOf(bus: EventBus, group: string, topics: readonly string[]): Promise<number> {
  return (await bus.lag(group, topics)).reduce((n, p) => n + Number(p.lag), 0);
}

async function time<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: performance.now() - started, value };
}
