/**
 * The body of a Points replay on a thread of its own (replay-thread.ts starts it): its own pool and bus over
 * the same database, replayPoints as in the main thread, progress and the report posted back.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createPool } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logging/logger.js';
import { busFromConfig } from '../../shared/runtime/bus-from-config.js';
import { replayPoints } from './replay.js';
import type { PointsThreadInput, PointsThreadMessage } from './replay-thread.js';

const input = workerData as PointsThreadInput;
const post = (message: PointsThreadMessage) => parentPort!.postMessage(message);
const log = createLogger({ name: 'points-replay', level: input.logLevel });
const db = createPool(input.dbUrl, { max: input.poolSize, log, application: 'otmoic-points-replay' });
try {
  const bus = await busFromConfig(input.bus, db, input.dbUrl, log);
  try {
    const report = await replayPoints({
      db,
      bus,
      log,
      keep: input.keep,
      timeoutMs: input.timeoutMs,
      onProgress: (left) => post({ kind: 'progress', left }),
    });
    post({ kind: 'report', report });
  } finally {
    await bus.close();
  }
} finally {
  await db.end();
}
