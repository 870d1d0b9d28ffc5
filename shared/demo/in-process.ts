// `npm start -- --demo`: the demo's rounds in the service process, until it stops.
import { loadConfig } from '../config/index.js';
import { createLogger } from '../logging/logger.js';
import { runDemo } from './run.js';
import { DEFAULT_MIX } from './traffic.js';

export async function startDemoInProcess(): Promise<void> {
  const present = loadConfig().present;
  const wanted = (['rpc-urls', 'chainClients', 'point', 'agent', 'relay', 'devnet'] as const).filter((s) =>
    present.has(s),
  );
  const log = createLogger({ name: 'demo' });
  await runDemo(loadConfig({ require: wanted }), { rounds: 0, mix: DEFAULT_MIX, pauseMs: 3_000 }, log).catch(
    (err: unknown) => log.error({ err: (err as Error).message }, 'demo stopped'),
  );
}
