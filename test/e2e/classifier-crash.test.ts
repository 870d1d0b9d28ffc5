import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifierMigrations } from '../../services/classifier/migrations.js';
import { model } from '../../services/classifier/reference-model.js';
import { replayClassifier } from '../../services/classifier/replay.js';
import { DST, REPUTATION, SRC, CONTRACT } from '../../services/classifier/swap-timeline.js';
import {
  startSyntheticDidSupport,
  swapSpecs,
  SYNTHETIC_CHAIN_CLIENTS,
} from '../../services/classifier/synthetic-deployment.js';
import { swapTraffic } from '../../services/classifier/swap-traffic.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { createLogger } from '../../shared/logging/logger.js';
import { freePort } from '../../shared/net/free-port.js';
import { allTopics, topicSpec, type SwapVerdict, type Violation } from '../../topics/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { spawnTs, type Spawned } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const SWAPS = 1_000;
const KILLS = 3;

/**
 * The classifier as an operator runs it (its own process), killed hard at random points while 1,000 swaps of
 * every case flow in: every swap gets exactly one verdict, the one the reference model expects, no violation
 * is published twice, and a replay from the beginning gives identical verdicts and violations.
 */
describe('classifier under hard kills', () => {
  let db: TestDatabase;
  let bus: PostgresBus;
  let did: { url: string; close(): Promise<void> };
  let didUrl: string;
  let dir: string;
  let classifier: Spawned | undefined;
  let metricsPort: number;
  const log = createLogger({ level: 'silent' });

  beforeAll(async () => {
    db = await createTestDatabase([classifierMigrations]);
    bus = new PostgresBus({ pool: db.pool, connectionString: db.url, log });
    await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 8)));
    // The DID support service: the real SDK's route over the test accounts' names.
    did = await startSyntheticDidSupport();
    didUrl = did.url;
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-classifier-crash-'));
    metricsPort = await freePort();
    const client = (c: { chainId: string; evm: number }, reputation: boolean) =>
      `[[chainClients]]\nurl = "http://127.0.0.1:1"\nhistoryUrl = "http://127.0.0.1:1"\ninitBlockHeight = 0\nchainId = "${c.chainId}"\nnativeChainId = "${c.evm}"\nregisterPath = "/support/register"\nhistoryPath = "/support/history"\ncontractAddr = "${CONTRACT}"${reputation ? `\nreputationContractAddr = "${REPUTATION}"` : ''}`;
    await writeFile(
      path.join(dir, 'config.toml'),
      [
        `[classifier]\nport = ${metricsPort}\ndidSupportUrl = "${didUrl}"`,
        client(SRC, false),
        client(DST, true),
      ].join('\n\n'),
    );
  }, 60_000);

  afterAll(async () => {
    classifier?.child.kill('SIGKILL');
    await classifier?.exited;
    await bus?.close();
    await did?.close();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function start(): Promise<void> {
    classifier = spawnTs('bin/start.ts', ['classifier'], {
      ...process.env,
      CONFIG_PATH: path.join(dir, 'config.toml'),
      DATABASE_URL: db.url,
      LOG_LEVEL: 'info',
    });
    await classifier.waitFor(/"msg":"ready"/, 60_000);
  }
  async function kill(): Promise<void> {
    classifier!.child.kill('SIGKILL');
    await classifier!.exited;
    classifier = undefined;
  }

  it('gives every swap exactly one verdict through SIGKILLs, and a replay is identical', async () => {
    // Swaps of every case, their windows overlapping in time.
    const specs = swapSpecs(SWAPS, 42);
    const traffic = swapTraffic(specs);
    const expected = new Map(specs.map((spec, i) => [traffic.bids[i]!, model(spec)]));
    expect(expected.size).toBe(SWAPS);

    await start();
    // Publish the three streams interleaved in slices, while the classifier is being killed.
    const publishing = (async () => {
      const cursors = traffic.streams.map(() => 0);
      while (cursors.some((c, i) => c < traffic.streams[i]!.length)) {
        for (const [i, stream] of traffic.streams.entries()) {
          const slice = stream.slice(cursors[i], cursors[i]! + 40);
          cursors[i]! += slice.length;
          for (const topic of new Set(slice.map((m) => m.topic))) {
            // Topics are not ordered with each other: a height may be handled before its events.
            await bus.publish(
              topic,
              slice.filter((m) => m.topic === topic).map((m) => m.message),
            );
          }
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const decided = async () =>
      Number(
        (
          await db.pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM classifier_swaps WHERE status = 'decided'`,
          )
        ).rows[0]!.n,
      );
    const decidedAtKills: number[] = [];
    for (let k = 0; k < KILLS; k++) {
      await new Promise((r) => setTimeout(r, 800 + Math.floor(Math.random() * 1_500)));
      decidedAtKills.push(await decided());
      await kill();
      await start();
    }
    await publishing;
    // Every kill hit a classifier in the middle of its work.
    expect(decidedAtKills.filter((n) => n < SWAPS)).toHaveLength(KILLS);
    await waitFor(async () => (await decided()) === SWAPS, `${SWAPS} swaps decided`, 240_000);
    // What an operator sees: verdicts by outcome and case, nothing pending, decision lag per chain.
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/classifier_verdicts_total\{outcome="violation",case="[1-7]"\} [1-9]/);
    expect(metrics).toMatch(/classifier_pending_swaps\{waiting_for="clock"\} 0/);
    expect(metrics).toMatch(/classifier_oldest_pending_age_seconds 0/);
    expect(metrics).toMatch(/classifier_decision_lag_seconds_count\{chain="(9006|614)"\} [1-9]/);
    expect(metrics).toMatch(/bus_consumer_lag\{group="classifier",topic="chain.events"/);
    // The bus's deliveries since the last start: handled in batches, nothing dead-lettered.
    expect(metrics).toMatch(/bus_messages_handled_total\{group="classifier",topic="chain.events"\} [1-9]/);
    expect(metrics).toMatch(/bus_handler_batch_messages_count\{group="classifier"\} [1-9]/);
    expect(metrics).not.toMatch(/bus_dead_lettered_total\{/);
    await kill();

    // Exactly one verdict message per swap, and never a violation twice.
    const verdicts = await db.pool.query<{ value: string }>(
      `SELECT value FROM bus_messages WHERE topic = 'swap.verdicts'`,
    );
    const published = verdicts.rows.map((r) => JSON.parse(r.value).payload as SwapVerdict);
    expect(published).toHaveLength(SWAPS);
    expect(new Set(published.map((v) => v.bidId)).size).toBe(SWAPS);
    const violations = await db.pool.query<{ value: string }>(
      `SELECT value FROM bus_messages WHERE topic = 'violations'`,
    );
    const violationBids = violations.rows.map((r) => (JSON.parse(r.value).payload as Violation).bidId);
    expect(new Set(violationBids).size).toBe(violationBids.length);
    expect(violationBids.length).toBe(published.filter((v) => v.outcome === 'violation').length);

    // Each verdict is the one the reference model gives for the complete timeline.
    for (const verdict of published) {
      const want = expected.get(verdict.bidId)!;
      expect({
        bid: verdict.bidId,
        outcome: verdict.outcome,
        case: verdict.case,
        blockTime: verdict.blockTime,
      }).toEqual({ bid: verdict.bidId, outcome: want.outcome, case: want.case, blockTime: want.blockTime });
    }
    const cases = new Set(published.map((v) => v.case));
    for (const c of [null, 0, 1, 2, 3, 4, 5, 6, 7]) expect(cases.has(c)).toBe(true);

    const report = await replayClassifier({
      pool: db.pool,
      bus,
      chainClients: SYNTHETIC_CHAIN_CLIENTS,
      didSupportUrl: didUrl,
      log,
    });
    expect(report.verdicts).toMatchObject({ live: SWAPS, replay: SWAPS, identical: true });
    expect(report.violations.identical).toBe(true);
  }, 420_000);
});
