import { execFileSync } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import TOML from '@iarna/toml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import { chromiumPath } from '../support/chromium.js';
import { isolatedEnv, PROJECT_ROOT, spawnTs, type Spawned } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

/**
 * `npm start` with the shipped config.toml in a fresh checkout, as a newcomer runs it: the devnet, chain
 * clients, stand-ins and every service come up healthy within 30 s with one ready line of URLs; a short demo
 * produces verdicts of several cases and scores below basis for the cheaters, visible on the dashboard; Ctrl-C
 * stops everything, and the next start continues on the same chains and data.
 */
describe('npm start on the shipped config (devnet)', () => {
  let dir: string;
  let config: {
    point: { port: number };
    agent: { port: number };
    connector: { port: number };
    classifier: { port: number };
    relay: { port: number; systemChainId: string };
    notifier: { port: number };
    'rpc-urls': Record<string, string>;
    chainClient: Array<{ port: number }>;
  };
  let system: Spawned | undefined;
  let cheaters: { user: string; lpId: string } | undefined;
  const points = () => `http://127.0.0.1:${config.point.port}`;

  beforeAll(async () => {
    // A fresh checkout of the working tree (tracked and new files, no data/), sharing node_modules.
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-system-'));
    await chmod(dir, 0o755);
    const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: PROJECT_ROOT })
      .toString()
      .split('\n')
      .filter(Boolean);
    for (const file of files) {
      const from = path.join(PROJECT_ROOT, file);
      await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
      await cp(from, path.join(dir, file)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err; // deleted in the working tree
      });
    }
    await symlink(path.join(PROJECT_ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    config = TOML.parse(await readFile(path.join(dir, 'config.toml'), 'utf8')) as unknown as typeof config;
  });

  afterAll(async () => {
    if (system && system.child.exitCode === null) {
      system.child.kill('SIGINT');
      await system.exited;
    }
    await rm(dir, { recursive: true, force: true });
  });

  const start = async () => {
    const started = Date.now();
    system = spawnTs('bin/start.ts', [], isolatedEnv({ LOG_LEVEL: 'info' }), { cwd: dir });
    await system.waitFor(/"msg":"ready"/, 30_000);
    return Date.now() - started;
  };

  const stop = async () => {
    const stoppedAt = Date.now();
    system!.child.kill('SIGINT');
    const exit = await system!.exited;
    expect(exit.code).toBe(0);
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    const output = system!.output();
    expect(output).toContain('"msg":"stopped"');
    // A clean stop warns of nothing: what was in flight was stopped, it did not fail.
    const stopping = output.slice(output.lastIndexOf('"msg":"stopping"'));
    expect(stopping.split('\n').filter((line) => /"level":(40|50|60)/.test(line))).toEqual([]);
    // One "service" per line: a JSON line with a key twice is refused by strict log stores (Elasticsearch).
    expect(output.split('\n').filter((line) => line.split('"service":').length > 2)).toEqual([]);
  };

  const rpc = async (url: string, method: string) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: [] }),
    });
    return ((await response.json()) as { result: string }).result;
  };

  it('starts everything on the fixed ports of config.toml, healthy, with one ready line of URLs', async () => {
    for (const url of Object.values(config['rpc-urls'])) {
      const port = Number(new URL(url).port);
      expect(await portFree(port), `port ${port} must be free for this test`).toBe(true);
    }
    const tookMs = await start();
    expect(tookMs).toBeLessThan(30_000);
    const ready = system!
      .output()
      .split('\n')
      .find((line) => line.includes('"msg":"ready"'))!;
    const { services, urls } = JSON.parse(ready) as { services: string[]; urls: Record<string, string> };
    expect(services).toEqual([
      'devnet',
      'chain-client',
      'connector',
      'classifier',
      'points',
      'agent',
      'relay',
      'notifier',
    ]);
    expect(urls.dashboard).toBe(`${points()}/dashboard`);
    const ports = [
      config.point.port,
      config.agent.port,
      config.connector.port,
      config.classifier.port,
      config.relay.port,
      config.notifier.port,
      ...config.chainClient.map((c) => c.port),
    ];
    for (const port of ports) {
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      expect(health.status, `health of :${port}`).toBe(200);
    }
    for (const url of Object.values(config['rpc-urls'])) expect(await rpc(url, 'eth_chainId')).toMatch(/^0x/);
  }, 60_000);

  it('a short demo gives verdicts of several cases and scores below basis for the cheaters', async () => {
    const demo = spawnTs('bin/demo.ts', ['--rounds', '1'], isolatedEnv({ LOG_LEVEL: 'info' }), { cwd: dir });
    const exit = await demo.exited;
    expect(exit.code, demo.output().slice(-2_000)).toBe(0);
    const played = demo
      .output()
      .split('\n')
      .filter((line) => line.includes('"msg":"swap played"'))
      .map(
        (line) =>
          JSON.parse(line) as {
            kind: string;
            bidId: string;
            user: string;
            lpId: string;
            relayCommand?: string;
            complaint?: string;
          },
      );
    expect(new Set(played.map((p) => p.kind))).toEqual(
      new Set(['honest', '1', '2', '3', '4', '5', '6', '7']),
    );

    // Every swap decided, each case as played (within two minutes of the demo).
    const cases = new Map<string, string>();
    await waitFor(
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 500));
        for (const swap of played) {
          if (cases.has(swap.bidId)) continue;
          const answer = await fetch(`${points()}/complaint?bid=${swap.bidId}`);
          if (answer.status !== 200) continue;
          const body = (await answer.json()) as { status: string; verdict?: { case: number | null } };
          if (body.status === 'decided') cases.set(swap.bidId, String(body.verdict?.case ?? 'honest'));
        }
        return cases.size === played.length;
      },
      'a verdict for every played swap',
      120_000,
    );
    for (const swap of played) expect(cases.get(swap.bidId), `${swap.kind} ${swap.bidId}`).toBe(swap.kind);

    // The case-1 complaint went through the Agent's HTTP route, as the SDK sends it.
    expect(played.find((p) => p.kind === '1')?.complaint).toBe('agent');
    // The late LP of one case-6 swap was rescued by the relay's behalf confirm_in, confirmed on chain.
    const rescued = played.find((p) => p.relayCommand !== undefined);
    expect(rescued?.kind).toBe('6');
    const relayBase = `http://127.0.0.1:${config.relay.port}/evm-client-${config.relay.systemChainId}/relay`;
    const command = (await (await fetch(`${relayBase}/behalf/commands/${rescued!.relayCommand}`)).json()) as {
      command: { action: string; status: string; tx_hash: string };
    };
    expect(command.command).toMatchObject({
      action: 'confirm_in',
      status: 'confirmed',
      tx_hash: expect.stringMatching(/^0x/),
    });

    const cheater = played.find((p) => p.kind === '2')!.user;
    cheaters = { user: cheater, lpId: played.find((p) => p.kind === '3')!.lpId };
    const user = (await (await fetch(`${points()}/user-point?address=${cheater}`)).json()) as {
      score_tenths: number;
      basis: { tenths: number };
    };
    expect(user.score_tenths).toBeLessThan(user.basis.tenths);
    const lpId = played.find((p) => p.kind === '3')!.lpId;
    const lp = (await (await fetch(`${points()}/lp-point?lp_id=${lpId}`)).json()) as {
      score_tenths: number;
      basis: { tenths: number };
    };
    expect(lp.basis.tenths).toBeGreaterThan(0);
    expect(lp.score_tenths).toBeLessThan(lp.basis.tenths);
  }, 180_000);

  it('the dashboard shows them: verdicts by case, the cheating LP below its tier, pipeline health', async () => {
    const verdicts = (await (await fetch(`${points()}/dashboard/verdicts`)).json()) as {
      series: Record<string, number[]>;
    };
    expect(Object.keys(verdicts.series)).toEqual(
      expect.arrayContaining([
        'normal',
        'case 1',
        'case 2',
        'case 3',
        'case 4',
        'case 5',
        'case 6',
        'case 7',
      ]),
    );
    const pipeline = (await (await fetch(`${points()}/dashboard/pipeline`)).json()) as {
      chains: Array<{ chain: string; connector_height: number }>;
      consumers: Array<{ group: string; handled: number; deadLettered: number }>;
      commands: Record<string, unknown>;
    };
    expect(pipeline.chains.map((c) => c.chain).sort()).toEqual(['614', '9006']);
    expect(pipeline.consumers.map((c) => c.group)).toEqual(expect.arrayContaining(['classifier', 'points']));
    // Every case decided: the classifier and Points handled messages, and nothing went to a dead-letter topic.
    const byGroup = new Map(pipeline.consumers.map((c) => [c.group, c]));
    expect(byGroup.get('classifier')!.handled).toBeGreaterThan(0);
    expect(byGroup.get('points')!.handled).toBeGreaterThan(0);
    expect(pipeline.consumers.filter((c) => c.deadLettered > 0)).toEqual([]);
    expect(pipeline.commands).toHaveProperty('relay');
    const page = await fetch(`${points()}/dashboard/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('/dashboard/vendor/chart.umd.min.js');
  });

  it('the dashboard in headless Chromium: no console error, live data, a lookup, a screenshot', async (context) => {
    const executablePath = chromiumPath();
    if (!executablePath) {
      console.log('SKIPPED: no Chromium (apt-get install -y chromium, or set CHROMIUM_PATH)');
      context.skip();
      return;
    }
    const browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 1500 } });
      const problems: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(message.text());
      });
      page.on('pageerror', (error) => problems.push(error.message));
      await page.goto(`${points()}/dashboard`);
      // Live data: the ranking lists the cheating LP below its tier, the chart has its datasets, heights show.
      const lpRow = page.locator('#ranking tbody tr', { hasText: cheaters!.lpId });
      await lpRow.locator('.below').waitFor({ timeout: 15_000 });
      await page.locator('#chains tbody tr', { hasText: '9006' }).waitFor();
      // The relay's behalf command and the Agent's complaint, each confirmed.
      await page
        .locator('#commands tbody tr', { hasText: 'relay' })
        .filter({ hasText: 'confirmed: 1' })
        .waitFor();
      await page
        .locator('#commands tbody tr', { hasText: 'agent' })
        .filter({ hasText: 'confirmed: 1' })
        .waitFor();
      const datasets = await page.evaluate(
        () =>
          (
            globalThis as unknown as { Chart: { getChart(id: string): { data: { datasets: unknown[] } } } }
          ).Chart.getChart('verdicts-chart').data.datasets.length,
      );
      expect(datasets).toBeGreaterThanOrEqual(8);
      // A lookup of the cheating user: its score, a history, deduction records linking to the swap.
      await page.fill('#subject', cheaters!.user);
      await page.click('#lookup button');
      await page.locator('#records tbody tr').first().waitFor({ timeout: 10_000 });
      expect(await page.locator('#summary').textContent()).toMatch(/score \d\.\d/);
      expect(await page.locator('#records tbody tr').count()).toBeGreaterThanOrEqual(4);
      expect(await page.locator('#records a[href^="/complaint?bid=0x"]').count()).toBeGreaterThanOrEqual(4);
      await page.waitForTimeout(500);
      await page.screenshot({
        path: path.join(PROJECT_ROOT, 'test-artifacts', 'dashboard.png'),
        fullPage: true,
      });
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);

  it('Ctrl-C stops everything; the next start continues on the same chains and scores', async () => {
    const chainUrl = Object.values(config['rpc-urls'])[0]!;
    const heightBefore = await rpc(chainUrl, 'eth_blockNumber');
    const rankingBefore = await (await fetch(`${points()}/lp-ranking`)).json();
    await stop();
    for (const url of Object.values(config['rpc-urls']))
      expect(await portFree(Number(new URL(url).port))).toBe(true);
    await start();
    expect(await rpc(chainUrl, 'eth_blockNumber')).toBe(heightBefore);
    const rankingAfter = (await (await fetch(`${points()}/lp-ranking`)).json()) as { lps: unknown };
    expect(rankingAfter.lps).toEqual((rankingBefore as { lps: unknown }).lps);
    await stop();
  }, 90_000);
});

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
