import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const PROJECT_ROOT = path.resolve(import.meta.dirname, '../..');

export interface Spawned {
  child: ChildProcess;
  output(): string;
  /** Resolves when a line of output matches `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs a TypeScript entry point of the project in its own node process (tsx loader), as npm scripts do. */
export function spawnTs(
  entry: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { cwd?: string } = {},
): Spawned {
  const root = options.cwd ?? PROJECT_ROOT;
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, entry), ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const l of listeners) l();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => output,
    exited,
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pattern.test(output)) {
            cleanup();
            resolve();
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${pattern}; output:\n${output.slice(-3_000)}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        void exited.then(() => {
          if (!pattern.test(output)) {
            cleanup();
            reject(new Error(`process exited before ${pattern}; output:\n${output.slice(-3_000)}`));
          }
        });
        listeners.add(check);
        check();
      });
    },
  };
}

/** The environment without the variables that would redirect a child to external servers. */
export function isolatedEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of [
    'DATABASE_URL',
    'DBHOST',
    'DBPORT',
    'DBUSER',
    'DBPASS',
    'KAFKA_BROKERS',
    'MONGO_HOST',
    'CONFIG_PATH',
  ]) {
    delete env[key];
  }
  return { ...env, ...extra };
}
