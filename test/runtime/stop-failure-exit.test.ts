import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../shared/net/free-port.js';
import { databaseForSuite } from '../support/database.js';
import { isolatedEnv, spawnTs } from '../support/processes.js';
import { waitFor as waitUntilHolds } from '../support/wait.js';

describe('npm start stopped by a signal', () => {
  const db = databaseForSuite();

  it('exits non-zero when a service failed to stop (its failure is not reported as a clean stop)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-stopfail-'));
    const config = path.join(dir, 'config.toml');
    await writeFile(config, 'n8nUrl = "http://127.0.0.1:1/hook"\n');
    const proc = spawnTs(
      'test/support/stop-failure-runner.ts',
      [],
      isolatedEnv({ CONFIG_PATH: config, DATABASE_URL: db.url, LOG_LEVEL: 'info' }),
    );
    try {
      await proc.waitFor(/"msg":"ready"/, 60_000);
      proc.child.kill('SIGTERM');
      const exit = await proc.exited;
      expect(proc.output()).toContain('stop failed');
      expect(exit.code).not.toBe(0);
    } finally {
      proc.child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);
});

/**
 * Ctrl-C while an outbound call hangs (an n8n receiver that never answers; the notifier's post waits up to
 * 30 s, longer than the runner's 4.5 s deadline): the stop aborts it and still closes the pool and the
 * embedded PostgreSQL, exit 0. A service that does not stop at all costs exit 1, but never the database.
 */
describe('npm start stopped while work hangs', () => {
  let dir: string;
  let dbPort: number;
  let silent: Server;
  let posts = 0;
  /** The paths the silent server was asked (each service's endpoint has its own). */
  const asked = new Set<string>();
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-slowstop-'));
    await chmod(dir, 0o755);
    dbPort = await freePort();
    // Takes the request and never answers.
    silent = createServer((request) => {
      posts++;
      asked.add(request.url ?? '');
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    silent?.closeAllConnections();
    await new Promise((resolve) => silent?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The silent server's URL for `route`. */
  const silentUrl = (route: string) => `http://127.0.0.1:${(silent.address() as AddressInfo).port}${route}`;
  const configFile = async (sections = '') => {
    const file = path.join(dir, 'config.toml');
    await writeFile(
      file,
      `n8nUrl = "${silentUrl('/hook')}"\n${sections}\n[database]\ndataDir = "${path.join(dir, 'pg')}"\nembeddedPort = ${dbPort}\n`,
    );
    return file;
  };
  /** SIGINT once `waiting` holds; the stop must be clean (exit 0) and within the deadline. */
  const stopsCleanly = async (proc: ReturnType<typeof spawnTs>) => {
    const stoppedAt = Date.now();
    proc.child.kill('SIGINT');
    const exit = await proc.exited;
    const took = Date.now() - stoppedAt;
    expect(exit.code, proc.output()).toBe(0);
    expect(took).toBeLessThan(4_500);
    expect(proc.output()).not.toContain('stop failed');
    expect(proc.output()).toContain('embedded PostgreSQL stopped');
    expect(await databaseRefuses()).toBe(true);
  };
  const databaseRefuses = async () => {
    const socket = net.connect(dbPort, '127.0.0.1');
    const refused = await new Promise<boolean>((resolve) => {
      socket.once('connect', () => resolve(false));
      socket.once('error', () => resolve(true));
    });
    socket.destroy();
    return refused;
  };

  it('aborts an n8n post that never answers, closes the database, exits 0 within the deadline', async () => {
    const proc = spawnTs(
      'bin/start.ts',
      [],
      isolatedEnv({ CONFIG_PATH: await configFile(), LOG_LEVEL: 'info' }),
    );
    try {
      await proc.waitFor(/"msg":"ready"/, 60_000);
      const password = (await readFile(path.join(dir, 'pg.password'), 'utf8')).trim();
      const client = new pg.Client(
        `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${dbPort}/otmoic`,
      );
      await client.connect();
      await client.query(
        `INSERT INTO notifier_outbox (id, kind, payload) VALUES ('slow-stop:1', 'violation', '{}')`,
      );
      await client.end();
      await waitUntilHolds(() => posts > 0, 'the notifier posting to n8n', 10_000);

      const stoppedAt = Date.now();
      proc.child.kill('SIGINT');
      const exit = await proc.exited;
      const took = Date.now() - stoppedAt;
      expect(exit.code, proc.output()).toBe(0);
      expect(took).toBeLessThan(4_500);
      expect(proc.output()).toContain('embedded PostgreSQL stopped');
      // Cut off by the stop, not by n8n: no failed delivery is reported.
      expect(proc.output()).not.toContain('n8n receiver failing');
      expect(await databaseRefuses()).toBe(true);
    } finally {
      proc.child.kill('SIGKILL');
    }
  }, 90_000);

  it("aborts the relay sender's and the Agent's RPC calls to an endpoint that never answers, exits 0 in time", async () => {
    const [relayPort, agentPort] = [await freePort(), await freePort()];
    // The relay's sender asks eth_chainId first; the Agent without agent.chainId asks it before it binds.
    const sections = `
[relay]
port = ${relayPort}
systemChainId = "9006"
chainId = 97
rpc = "${silentUrl('/relay-rpc')}"
contractAddr = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
priv = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6"
blockTimeSeconds = 1
[agent]
port = ${agentPort}
rpc = "${silentUrl('/agent-rpc')}"
priv = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
contractAddr = "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0"
didSource = "contract"
`;
    const proc = spawnTs(
      'bin/start.ts',
      [],
      isolatedEnv({ CONFIG_PATH: await configFile(sections), LOG_LEVEL: 'info' }),
    );
    try {
      await proc.waitFor(/"msg":"ready"/, 60_000);
      await waitUntilHolds(
        () => asked.has('/relay-rpc') && asked.has('/agent-rpc'),
        'the relay and the Agent asking their RPC',
        10_000,
      );
      await stopsCleanly(proc);
      // Cut off by the stop, not by the chain: nothing is reported as the chain's trouble.
      expect(proc.output()).not.toContain('chain unreachable');
      expect(proc.output()).not.toContain('sender pass failed');
      expect(proc.output()).not.toContain('chain id not known yet');
    } finally {
      proc.child.kill('SIGKILL');
    }
  }, 90_000);

  it("aborts the Connector's gap fill from an RPC that never answers (and its registrations), exits 0 in time", async () => {
    const connectorPort = await freePort();
    // The chain client's routes never answer either: the registrations hang, the history never comes, so the
    // gap is read from the RPC after historyTimeoutMs, and that read hangs.
    const sections = `
[connector]
port = ${connectorPort}
callbackUrl = "http://127.0.0.1:${connectorPort}/callback"
historyTimeoutMs = 100
[rpc-urls]
97 = "${silentUrl('/connector-rpc')}"
[[chainClients]]
url = "${silentUrl('/')}"
historyUrl = "${silentUrl('/')}"
initBlockHeight = 0
chainId = "9006"
nativeChainId = "97"
registerPath = "/support/register"
historyPath = "/support/history"
contractAddr = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
`;
    const proc = spawnTs(
      'bin/start.ts',
      [],
      isolatedEnv({ CONFIG_PATH: await configFile(sections), LOG_LEVEL: 'info' }),
    );
    try {
      await proc.waitFor(/"msg":"ready"/, 60_000);
      // A live chunk far above the stored height: a gap. Its answer waits for its block time (the RPC).
      const posted = fetch(`http://127.0.0.1:${connectorPort}/callback/9006/swap`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'update_height', height: 500 }),
      }).catch(() => undefined);
      await proc.waitFor(/history did not arrive: reading the gap from the RPC/, 10_000);
      await waitUntilHolds(
        () => asked.has('/connector-rpc') && asked.has('/support/register'),
        'the Connector asking its RPC and registering at the chain client',
        10_000,
      );
      await stopsCleanly(proc);
      await posted;
      // Cut off by the stop: no failed read, registration or history request is reported.
      expect(proc.output()).not.toContain('reading the gap from the RPC failed');
      expect(proc.output()).not.toContain('registration failed');
      expect(proc.output()).not.toContain('history request failed');
    } finally {
      proc.child.kill('SIGKILL');
    }
  }, 90_000);

  it("aborts the Classifier's DID lookup from a DID service that never answers, exits 0 in time", async () => {
    const classifierPort = await freePort();
    const sections = `
[classifier]
port = ${classifierPort}
didSupportUrl = "${silentUrl('/did')}"
[[chainClients]]
url = "${silentUrl('/')}"
historyUrl = "${silentUrl('/')}"
initBlockHeight = 0
chainId = "9006"
nativeChainId = "97"
registerPath = "/support/register"
historyPath = "/support/history"
contractAddr = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
`;
    const env = isolatedEnv({ CONFIG_PATH: await configFile(sections), LOG_LEVEL: 'info' });
    // A swap waiting for a DID answer: the Classifier asks for it when it starts.
    const first = spawnTs('bin/start.ts', [], env);
    try {
      await first.waitFor(/"msg":"ready"/, 60_000);
      const password = (await readFile(path.join(dir, 'pg.password'), 'utf8')).trim();
      const client = new pg.Client(
        `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${dbPort}/otmoic`,
      );
      await client.connect();
      await client.query(
        `INSERT INTO classifier_swaps (bid_id, facts, status, wait_kind, wait_address)
         VALUES ('0xslowstop', '{}', 'pending', 'did', '0x00000000000000000000000000000000000000aa')
         ON CONFLICT DO NOTHING`,
      );
      await client.end();
      first.child.kill('SIGINT');
      expect((await first.exited).code, first.output()).toBe(0);
    } finally {
      first.child.kill('SIGKILL');
    }
    const proc = spawnTs('bin/start.ts', [], env);
    try {
      await proc.waitFor(/"msg":"ready"/, 60_000);
      await waitUntilHolds(
        () => [...asked].some((url) => url.startsWith('/did/find/owner/')),
        'the Classifier asking the DID service',
        10_000,
      );
      await stopsCleanly(proc);
      // Cut off by the stop, not refused by the DID service: no failed lookup is reported.
      expect(proc.output()).not.toContain('DID lookup failed');
    } finally {
      proc.child.kill('SIGKILL');
    }
  }, 120_000);

  it('a service that never stops costs exit 1, but the pool and the embedded PostgreSQL are still closed', async () => {
    const proc = spawnTs(
      'test/support/stuck-stop-runner.ts',
      [],
      isolatedEnv({ CONFIG_PATH: await configFile(), LOG_LEVEL: 'info' }),
    );
    try {
      await proc.waitFor(/"msg":"ready"/, 60_000);
      const stoppedAt = Date.now();
      proc.child.kill('SIGTERM');
      const exit = await proc.exited;
      const took = Date.now() - stoppedAt;
      expect(exit.code).toBe(1);
      expect(took).toBeLessThan(8_000);
      expect(proc.output()).toMatch(/"service":"stuck".*stop failed/);
      expect(proc.output()).toContain('embedded PostgreSQL stopped');
      expect(await databaseRefuses()).toBe(true);
    } finally {
      proc.child.kill('SIGKILL');
    }
  }, 90_000);
});
