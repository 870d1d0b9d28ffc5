/**
 * `replayPoints` on a worker thread: the replay of the whole pipeline runs the Classifier's and Points' at
 * once, and on one thread they share one core (and one heap to collect) while the second idles. The thread
 * opens its own pool and bus from the same settings; the tables it builds and compares are the same.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { AppConfig } from '../../shared/config/index.js';
import type { PointsReplayReport } from './replay.js';

export interface PointsThreadInput {
  dbUrl: string;
  /** The bus section of the configuration (the thread opens the same kind of bus). */
  bus: AppConfig['bus'];
  poolSize: number;
  keep: boolean;
  timeoutMs?: number;
  logLevel: string;
}

export type PointsThreadMessage =
  { kind: 'progress'; left: number } | { kind: 'report'; report: PointsReplayReport };

export function replayPointsOnThread(
  input: PointsThreadInput,
  onProgress?: (left: number) => void,
): Promise<PointsReplayReport> {
  // The worker is this file's sibling, as source under tsx or compiled: the same extension as this one.
  const ext = extname(fileURLToPath(import.meta.url));
  const entry = new URL(`./replay-worker${ext}`, import.meta.url);
  return new Promise((resolve, reject) => {
    const [filename, evaluated] = workerEntry(entry);
    // Not this process's flags (a worker refuses --max-semi-space-size): its young generation is set here, as
    // large as the replay's npm script gives the main thread (3 × 64 MB semi-spaces), for as few scavenges.
    const worker = new Worker(filename, {
      eval: evaluated,
      workerData: input,
      execArgv: [],
      resourceLimits: { maxYoungGenerationSizeMb: 192 },
    });
    let report: PointsReplayReport | undefined;
    worker.on('message', (message: PointsThreadMessage) => {
      if (message.kind === 'progress') onProgress?.(message.left);
      else report = message.report;
    });
    worker.on('error', reject);
    worker.on('exit', (code) => {
      if (report) resolve(report);
      else reject(new Error(`the points replay thread exited (code ${code}) without a report`));
    });
  });
}

/**
 * A compiled entry runs as it is. A TypeScript one (under tsx or a test runner) needs tsx's loader, which a
 * worker of Node 20 does not inherit from `--import`: the thread registers it before importing the entry.
 */
function workerEntry(entry: URL): [filename: string | URL, evaluated: boolean] {
  if (!entry.pathname.endsWith('.ts')) return [entry, false];
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then((t) => { t.register(); return import(${JSON.stringify(entry.href)}); })`;
  return [code, true];
}
