import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../shared/net/free-port.js';

/**
 * A real MongoDB-compatible server without Docker: FerretDB 1.x built from the Go module proxy and run on
 * loopback with its SQLite backend. Built once into ~/.cache/otmoic.
 *
 * Why not `go install …/cmd/ferretdb@v1.24.0`: the module zip lacks build/version/version.txt (a generated
 * file) and such a binary panics at start, and `go install` also asks the proxy for the version list. So we
 * build from a pinned go.mod/go.sum (beside this file) in the cache, vendor it and add that one file.
 */
export const FERRETDB_VERSION = 'v1.24.0';
const MODULE_FILES = path.join(import.meta.dirname, 'ferretdb');
const run = promisify(execFile);

export function ferretdbCacheDir(): string {
  return (
    process.env.OTMOIC_FERRETDB_HOME ??
    path.join(os.homedir(), '.cache', 'otmoic', `ferretdb-${FERRETDB_VERSION.slice(1)}`)
  );
}

const binaryPath = () => path.join(ferretdbCacheDir(), 'bin', 'ferretdb');

/** undefined when the binary is cached or Go can build it, else why not. */
export async function ferretdbProblem(): Promise<string | undefined> {
  if (existsSync(binaryPath())) return undefined;
  try {
    await run('go', ['version'], { timeout: 30_000 });
    return undefined;
  } catch {
    return `go is not installed and FerretDB ${FERRETDB_VERSION} is not built in ${ferretdbCacheDir()}`;
  }
}

/** Builds the binary once (a few minutes of CPU on the first run); later calls find it in the cache. */
export async function ensureFerretdb(): Promise<string> {
  const binary = binaryPath();
  if (existsSync(binary)) return binary;
  const src = path.join(ferretdbCacheDir(), 'src');
  await rm(src, { recursive: true, force: true });
  await mkdir(src, { recursive: true });
  for (const file of ['go.mod', 'go.sum', 'tools.go'])
    await copyFile(path.join(MODULE_FILES, file), path.join(src, file));
  const go = (args: string[]) =>
    run('go', args, {
      cwd: src,
      timeout: 20 * 60_000,
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, GOFLAGS: '-mod=mod', CGO_ENABLED: '0' },
    });
  await go(['mod', 'vendor']);
  await writeFile(
    path.join(src, 'vendor/github.com/FerretDB/FerretDB/build/version/version.txt'),
    `${FERRETDB_VERSION}\n`,
  );
  const partial = `${binary}.partial-${process.pid}`;
  await mkdir(path.dirname(binary), { recursive: true });
  await run('go', ['build', '-mod=vendor', '-o', partial, 'github.com/FerretDB/FerretDB/cmd/ferretdb'], {
    cwd: src,
    timeout: 20 * 60_000,
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, GOFLAGS: '', CGO_ENABLED: '0' },
  });
  await rename(partial, binary);
  await rm(src, { recursive: true, force: true });
  return binary;
}

export interface FerretdbServer {
  host: string;
  port: number;
  /** mongodb://127.0.0.1:<port>/ */
  url: string;
  stop(): Promise<void>;
}

/** Starts FerretDB (SQLite backend) on 127.0.0.1 with its data in `dataDir` (a temporary one by default). */
export async function startFerretdb(
  options: { dataDir?: string; port?: number } = {},
): Promise<FerretdbServer> {
  const binary = await ensureFerretdb();
  const temporary = !options.dataDir;
  const dataDir =
    options.dataDir ?? path.join(os.tmpdir(), `otmoic-ferretdb-${randomBytes(4).toString('hex')}`);
  await mkdir(path.join(dataDir, 'sqlite'), { recursive: true });
  const port = options.port ?? (await freePort());
  const child: ChildProcess = spawn(
    binary,
    [
      '--handler=sqlite',
      `--sqlite-url=file:${path.join(dataDir, 'sqlite')}/`,
      `--listen-addr=127.0.0.1:${port}`,
      '--debug-addr=-',
      `--state-dir=${dataDir}`,
      '--telemetry=disable',
      '--log-level=WARN',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const deadline = Date.now() + 60_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null) throw new Error(`FerretDB exited while starting:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`FerretDB did not listen on ${port} within 60 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    host: '127.0.0.1',
    port,
    url: `mongodb://127.0.0.1:${port}/`,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      if (temporary) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.setTimeout(1_000, () => (socket.destroy(), resolve(false)));
    socket.on('error', () => resolve(false));
    socket.on('connect', () => (socket.destroy(), resolve(true)));
  });
}
