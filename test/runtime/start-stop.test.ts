import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../shared/net/free-port.js';
import { isolatedEnv, spawnTs } from '../support/processes.js';

/**
 * `npm start` on the embedded profile, as a user runs it: every present service comes up on a real embedded
 * PostgreSQL, SIGINT stops it cleanly within 5 s, and a second start reuses the data.
 */
describe('service runner on the embedded profile', () => {
  let dir: string;
  let ports: { point: number; agent: number; connector: number; classifier: number; db: number };
  let configPath: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-start-'));
    await chmod(dir, 0o755);
    ports = {
      point: await freePort(),
      agent: await freePort(),
      connector: await freePort(),
      classifier: await freePort(),
      db: await freePort(),
    };
    configPath = path.join(dir, 'config.toml');
    await writeFile(
      configPath,
      `
n8nUrl = "http://127.0.0.1:5678/hook"
[point]
port = ${ports.point}
relayAdminUrl = "http://127.0.0.1:1"
didSupportUrl = "http://127.0.0.1:2"
refreshInterval = 1000
[agent]
port = ${ports.agent}
rpc = "http://127.0.0.1:8545"
priv = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
contractAddr = "0x5FbDB2315678afecb367f032d315F642f64180aa"
[classifier]
port = ${ports.classifier}
didSupportUrl = "http://127.0.0.1:2"
[connector]
port = ${ports.connector}
callbackUrl = "http://127.0.0.1:${ports.connector}/callback"
[[chainClients]]
url = "http://127.0.0.1:9900"
historyUrl = "http://127.0.0.1:9900"
initBlockHeight = 0
chainId = "9006"
nativeChainId = "97"
registerPath = "/support/register"
historyPath = "/support/history"
contractAddr = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
[rpc-urls]
97 = "http://127.0.0.1:8545"
[database]
dataDir = "${path.join(dir, 'pg')}"
embeddedPort = ${ports.db}
`,
    );
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function startAndStop() {
    const proc = spawnTs('bin/start.ts', [], isolatedEnv({ CONFIG_PATH: configPath, LOG_LEVEL: 'info' }));
    try {
      await proc.waitFor(/"msg":"ready"/, 60_000);
      for (const port of [ports.point, ports.agent, ports.connector, ports.classifier]) {
        const health = await fetch(`http://127.0.0.1:${port}/health`);
        expect(health.status).toBe(200);
        // No chain answers at agent.rpc here: the Agent says it cannot send (its sender check), 200 all the same.
        expect(await health.json()).toMatchObject({
          status: port === ports.agent ? 'degraded' : 'ok',
          checks: {
            database: { ok: true },
            bus: { ok: true },
            ...(port === ports.agent && { sender: { ok: false } }),
            // No dead-lettered event holds a chain clock; no DID lookup ran.
            ...(port === ports.classifier && { classifier: { ok: true, deadLetteredEvents: {} } }),
          },
        });
      }
      const metrics = await (await fetch(`http://127.0.0.1:${ports.point}/metrics`)).text();
      expect(metrics).toContain('process_cpu_user_seconds_total');
      expect(metrics).toContain('bus_consumer_lag');
      expect(metrics).toMatch(/^bus_outbox_messages 0$/m);
      const stoppedAt = Date.now();
      proc.child.kill('SIGINT');
      const exit = await proc.exited;
      const took = Date.now() - stoppedAt;
      expect(exit.code).toBe(0);
      expect(took).toBeLessThan(5_000);
      expect(proc.output()).toContain('embedded PostgreSQL stopped');
      return proc.output();
    } finally {
      proc.child.kill('SIGKILL');
    }
  }

  it('starts every present service, stops on SIGINT within 5 s, and a second start reuses the data', async () => {
    const first = await startAndStop();
    expect(first).toContain('embedded PostgreSQL cluster created');
    // n8nUrl is set, so the notifier runs too.
    expect(first).toMatch(/"services":\["connector","classifier","points","agent","notifier"\]/);
    expect(first).toContain('migration applied');

    const second = await startAndStop();
    expect(second).not.toContain('cluster created');
    expect(second).not.toContain('migration applied'); // same database, schema already there
    expect(second).toContain('embedded PostgreSQL running');
  });

  it('starts only the service whose section the file has', async () => {
    const onlyPoints = path.join(dir, 'points-only.toml');
    await writeFile(
      onlyPoints,
      `[point]\nport = ${ports.point}\nrelayAdminUrl = "http://127.0.0.1:1"\ndidSupportUrl = "http://127.0.0.1:2"\nrefreshInterval = 1000\n[database]\ndataDir = "${path.join(dir, 'pg')}"\nembeddedPort = ${ports.db}\n`,
    );
    const proc = spawnTs('bin/start.ts', [], isolatedEnv({ CONFIG_PATH: onlyPoints }));
    try {
      await proc.waitFor(/"msg":"ready"/, 60_000);
      expect(proc.output()).toMatch(/"services":\["points"\]/);
      await expect(fetch(`http://127.0.0.1:${ports.agent}/health`)).rejects.toThrow();
      proc.child.kill('SIGTERM');
      expect((await proc.exited).code).toBe(0);
    } finally {
      proc.child.kill('SIGKILL');
    }
  });

  it('a signal during start-up lets what is starting finish, then stops it: no database is left running', async () => {
    const file = path.join(dir, 'points-signal.toml');
    await writeFile(
      file,
      `[point]\nport = ${ports.point}\nrelayAdminUrl = "http://127.0.0.1:1"\ndidSupportUrl = "http://127.0.0.1:2"\nrefreshInterval = 1000\n[database]\ndataDir = "${path.join(dir, 'pg')}"\nembeddedPort = ${ports.db}\n`,
    );
    const proc = spawnTs('bin/start.ts', [], isolatedEnv({ CONFIG_PATH: file, LOG_LEVEL: 'info' }));
    try {
      await proc.waitFor(/embedded PostgreSQL running/, 60_000);
      proc.child.kill('SIGTERM');
      expect((await proc.exited).code).toBe(0);
      expect(proc.output()).toContain('embedded PostgreSQL stopped');
      expect(proc.output()).not.toContain('"msg":"ready"');
      const socket = net.connect(ports.db, '127.0.0.1');
      const refused = await new Promise<boolean>((resolve) => {
        socket.once('connect', () => resolve(false));
        socket.once('error', () => resolve(true));
      });
      socket.destroy();
      expect(refused).toBe(true);
    } finally {
      proc.child.kill('SIGKILL');
    }
  });

  it('a second process on the same data shares the running server: it neither restarts nor stops it under the first', async () => {
    const pointsOn = async (port: number) => {
      const file = path.join(dir, `points-${port}.toml`);
      await writeFile(
        file,
        `[point]\nport = ${port}\nrelayAdminUrl = "http://127.0.0.1:1"\ndidSupportUrl = "http://127.0.0.1:2"\nrefreshInterval = 1000\n[database]\ndataDir = "${path.join(dir, 'pg')}"\nembeddedPort = ${ports.db}\n`,
      );
      return spawnTs('bin/start.ts', [], isolatedEnv({ CONFIG_PATH: file, LOG_LEVEL: 'info' }));
    };
    const databaseOk = async (port: number) => {
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      const body = (await health.json()) as { checks: { database: { ok: boolean } } };
      return health.status === 200 && body.checks.database.ok;
    };
    const otherPort = await freePort();
    const first = await pointsOn(ports.point);
    try {
      await first.waitFor(/"msg":"ready"/, 60_000);
      const second = await pointsOn(otherPort);
      try {
        await second.waitFor(/"msg":"ready"/, 60_000);
        expect(second.output()).toContain('using the embedded PostgreSQL another process runs');
        expect(second.output()).not.toContain('restarting it');
        second.child.kill('SIGTERM');
        expect((await second.exited).code).toBe(0);
        expect(second.output()).not.toContain('embedded PostgreSQL stopped');
      } finally {
        second.child.kill('SIGKILL');
      }
      // The first never lost its database.
      expect(await databaseOk(ports.point)).toBe(true);
      expect(first.output()).not.toMatch(/terminating connection|connection error|ECONNREFUSED/);
      first.child.kill('SIGTERM');
      expect((await first.exited).code).toBe(0);
      expect(first.output()).toContain('embedded PostgreSQL stopped');
    } finally {
      first.child.kill('SIGKILL');
    }
  });
});

describe('bad configuration ends the process', () => {
  const run = async (toml: string, args: string[] = [], env: NodeJS.ProcessEnv = {}) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-badcfg-'));
    const file = path.join(dir, 'config.toml');
    await writeFile(file, toml);
    const proc = spawnTs('bin/start.ts', args, isolatedEnv({ CONFIG_PATH: file, ...env }));
    const exit = await proc.exited;
    await rm(dir, { recursive: true, force: true });
    return { code: exit.code, output: proc.output() };
  };

  it('exits non-zero with one line per problem naming the key', async () => {
    const { code, output } = await run(
      '[point]\nport = "abc"\nrelayAdminUrl = "ftp://x"\nrefreshInterval = 10\n',
      ['points'],
    );
    expect(code).toBe(78);
    const lines = output.split('\n').filter((l) => l.startsWith('config error:'));
    expect(lines).toHaveLength(3);
    expect(output).toMatch(/config error: point\.port: .*number/);
    expect(output).toMatch(/config error: point\.relayAdminUrl: must be an http\(s\) URL/);
    expect(output).toMatch(/config error: point\.didSupportUrl: is required but missing/);
  });

  it('exits non-zero for a missing section, an unknown service, a bad environment variable', async () => {
    expect((await run('', ['agent'])).output).toMatch(/config error: agent: is required/);
    // A wrong word of the command line, not of the file: refused as one (README, Scripts), exit 2 with the usage.
    const unknown = await run('', ['nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.output).toMatch(/error: unknown service "nope"/);
    expect(unknown.output).toContain('usage: npm start');
    const badEnv = await run('', ['points'], { DATABASE_URL: 'mysql://x' });
    expect(badEnv.code).toBe(78);
    expect(badEnv.output).toMatch(/config error: env\.DATABASE_URL: must be a postgres:\/\/ URL/);
  });

  it('takes an empty LOG_LEVEL as unset, and refuses an unknown one as a config error, not a crash', async () => {
    const point = '[point]\nport = 1\nrelayAdminUrl = "http://x"\ndidSupportUrl = "http://x"\n';
    // Empty: the service starts far enough to refuse something else (here an agent section it lacks).
    const empty = await run(point, ['agent'], { LOG_LEVEL: '' });
    expect(empty.code).toBe(78);
    expect(empty.output).toMatch(/config error: agent: is required/);
    const unknown = await run(point, ['points'], { LOG_LEVEL: 'verbose' });
    expect(unknown.code).toBe(78);
    expect(unknown.output).toMatch(/config error: env\.LOG_LEVEL:/);
    expect(unknown.output).not.toMatch(/custom levels/);
  });

  it('does not print the secret of a bad agent section', async () => {
    const { code, output } = await run(
      '[agent]\nport = 1\nrpc = "http://127.0.0.1:1"\npriv = "0xdeadbeef-top-secret"\ncontractAddr = "0x1"\n',
      ['agent'],
    );
    expect(code).toBe(78);
    expect(output).toMatch(/config error: agent\.priv:/);
    expect(output).toMatch(/config error: agent\.contractAddr:/);
    expect(output).not.toContain('top-secret');
  });
});
