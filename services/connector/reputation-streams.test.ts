import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../shared/net/free-port.js';
import { pipelineHealth } from '../../shared/runtime/pipeline-health.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { serviceContext } from '../../test/support/service-context.js';
import { waitFor } from '../../test/support/wait.js';
import { startChainClient } from '../chain-client/index.js';
import { chainClientMigrations } from '../chain-client/migrations.js';
import { connectorService } from './index.js';
import { connectorMigrations } from './migrations.js';

const SWAP = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512';
const REPUTATION = '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0';

/** A chain client that takes every registration and history request and records them. */
async function acceptingChainClient() {
  const calls: Array<{ path: string; body: any }> = [];
  const server = http.createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      calls.push({ path: req.url!, body: JSON.parse(data) });
      const message = req.url!.includes('history') ? 'history task started' : 'register succeed';
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 200, message }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise((r) => server.close(r)),
  };
}

const connectorToml = (port: number, clientUrl: string, extra: string, entry: string) =>
  `[connector]\nport = ${port}\ncallbackUrl = "http://127.0.0.1:${port}/callback"\nreregisterIntervalMs = 1000
historyTimeoutMs = 100\nbackfillRetryMs = 500\nstuckReportIntervalMs = 1000\n${extra}
[rpc-urls]\n97 = "http://127.0.0.1:1"
[[chainClients]]\nurl = "${clientUrl}"\nhistoryUrl = "${clientUrl}"\ninitBlockHeight = 5\nchainId = "9006"\nnativeChainId = "97"
registerPath = "/support/register"\nhistoryPath = "/support/history"\ncontractAddr = "${SWAP}"\n${entry}`;

/** The series of a metric, as text lines, whose labels hold `stream="reputation"`. */
async function reputationSeries(registry: Registry): Promise<string[]> {
  return (await registry.metrics())
    .split('\n')
    .filter((line) => !line.startsWith('#') && line.includes('stream="reputation"'));
}

describe("the Connector's streams of a chain: reputation only with a reputation contract", () => {
  let db: TestDatabase;
  beforeAll(async () => void (db = await createTestDatabase([connectorMigrations, chainClientMigrations])));
  afterAll(async () => db?.drop());

  it('a chain without reputationContractAddr: no reputation registration, height, callback, lag or stuck stream', async () => {
    const client = await acceptingChainClient();
    const port = await freePort();
    // A row an earlier version stored for the stream: left as it is, and reported nowhere.
    await db.pool.query(
      `INSERT INTO connector_heights (chain_id, stream, height) VALUES ('9006', 'reputation', 5)`,
    );
    const context = await serviceContext(db, connectorToml(port, client.url, '', ''), [
      'connector',
      'chainClients',
      'rpc-urls',
    ]);
    const service = await connectorService.start(context);
    try {
      await waitFor(
        () => client.calls.filter((c) => c.path === '/support/register').length >= 2,
        'two swap registrations',
        15_000,
      );
      expect(client.calls.filter((c) => c.path.includes('reputation'))).toEqual([]);

      // A reputation body (a chain client registered by an earlier version posting its heartbeat, far ahead)
      // is answered as an unknown chain/stream, and opens no gap.
      const posted = await fetch(`http://127.0.0.1:${port}/callback/9006/reputation`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'update_height', height: 1000, data: [] }),
      });
      expect(posted.status).toBe(404);
      expect(await posted.json()).toEqual({
        code: 404,
        message: 'no chain client is configured for chain 9006 (reputation)',
      });
      // Longer than a gap takes to count as stuck (2 x historyTimeoutMs).
      await new Promise((r) => setTimeout(r, 600));

      const health = await fetch(`http://127.0.0.1:${port}/health`);
      const checks = ((await health.json()) as { checks: { streams: { status: string } } }).checks;
      expect(checks.streams).toEqual({ ok: true, status: 'ok' });
      expect(client.calls.filter((c) => c.path.includes('reputation'))).toEqual([]);
      expect(await reputationSeries(context.metrics)).toEqual([]);
      expect((await pipelineHealth(context.metrics)).chains).toEqual([
        { chain: '9006', connector_height: 5 },
      ]);
      const { rows } = await db.pool.query(
        `SELECT stream, height FROM connector_heights WHERE chain_id = '9006' ORDER BY stream`,
      );
      expect(rows).toEqual([
        { stream: 'reputation', height: '5' },
        { stream: 'swap', height: '5' },
      ]);
    } finally {
      await service.stop();
      await context.close();
      await client.close();
      await db.pool.query(`DELETE FROM connector_heights`);
    }
  }, 30_000);

  it('a chainClients entry with reputationContractAddr whose chain client has none fails loudly: refused, counted, logged, the stream stays', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    // Our chain client of chain 9006 without a reputation contract (its RPC is down: it delivers nothing).
    const chainClient = await startChainClient(
      { db: db.pool, log: pino({ level: 'silent' }), metrics: new Registry() },
      {
        port: 0,
        rpc: 'http://127.0.0.1:9',
        systemChainId: '9006',
        contractAddr: SWAP,
        confirmations: 0,
        startBlock: 0,
        pollIntervalMs: 60_000,
        deliveryAttempts: 1,
        keepSettledDays: 7,
      },
    );
    const url = `http://127.0.0.1:${chainClient.port}`;
    const port = await freePort();
    const context = await serviceContext(
      db,
      connectorToml(port, url, '', `reputationContractAddr = "${REPUTATION}"`),
      ['connector', 'chainClients', 'rpc-urls'],
    );
    const service = await connectorService.start({ ...context, log });
    try {
      const refusals = () =>
        lines.filter((l) => l.level === 40 && l.chain === '9006' && l.stream === 'reputation');
      await waitFor(() => refusals().length >= 1, 'the refused reputation registration logged', 15_000);
      const warning = refusals()[0]!;
      expect(warning.msg).toMatch(/^chain 9006: its chain client has no reputation contract/);
      expect(warning.msg).toMatch(/chainClient\.reputationContractAddr/);
      expect(warning.msg).toMatch(/removed from this chainClients entry/);
      expect(warning.err).toMatch(/register refused: 30231 /);
      await waitFor(
        async () =>
          (await context.metrics.getSingleMetricAsString('connector_registrations_total')).includes(
            'connector_registrations_total{chain="9006",stream="swap",outcome="registered"} 1',
          ),
        'the swap stream registered',
        15_000,
      );
      const counted = await context.metrics.getSingleMetricAsString('connector_registrations_total');
      expect(counted).toMatch(
        /connector_registrations_total\{chain="9006",stream="reputation",outcome="failed"\} [1-9]/,
      );
      expect(counted).not.toContain('stream="reputation",outcome="registered"');
      // Nothing registered at the chain client, so nothing posted there: the stream stays where it was.
      const registered = await db.pool.query(
        `SELECT kind FROM chain_client_registrations WHERE instance = '9006' ORDER BY kind`,
      );
      expect(registered.rows).toEqual([{ kind: 'swap' }]);
      const { rows } = await db.pool.query(
        `SELECT height FROM connector_heights WHERE chain_id = '9006' AND stream = 'reputation'`,
      );
      expect(rows).toEqual([{ height: '5' }]);
      // And /health says what to fix until it is fixed.
      const health = (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as {
        status: string;
        checks: Record<string, { ok: boolean; status: string; misconfigured?: string[] }>;
      };
      expect(health.status).toBe('degraded');
      expect(health.checks.registrations).toEqual({
        ok: false,
        status: 'degraded',
        misconfigured: [expect.stringMatching(/^chain 9006: its chain client has no reputation contract/)],
      });
    } finally {
      await service.stop();
      await context.close();
      await chainClient.stop();
    }
  }, 30_000);
});
