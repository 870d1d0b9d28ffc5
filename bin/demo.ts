#!/usr/bin/env node
// `npm run demo [-- --rounds N --mix honest=4,3=2 --pause-ms 3000]`: swaps between devnet users and LPs
// against the system `npm start` runs (same config.toml), including every case 1–7.
import { createLogger } from '../shared/logging/logger.js';
import { runDemo } from '../shared/demo/run.js';
import { DEFAULT_MIX, parseMix, type Mix } from '../shared/demo/traffic.js';
import { SWAP_KINDS } from '../shared/demo/cases.js';
import { commandLine, usageError } from './command-line.js';
import { configOrExit } from './operator.js';

const usage = `usage: npm run demo [-- --rounds N] [--mix kind=count,…] [--pause-ms N]
  --rounds N     rounds to play; 0 (the default) plays until Ctrl-C
  --mix …        swaps of each kind a round (kinds: ${SWAP_KINDS.join(', ')}), e.g. honest=4,3=2
  --pause-ms N   milliseconds between rounds (default 3000)`;
const { values } = commandLine(usage, {
  options: {
    rounds: { type: 'string', default: '0' },
    mix: { type: 'string', default: '' },
    'pause-ms': { type: 'string', default: '3000' },
  },
});
const count = (name: string, text: string): number => {
  if (!/^\d{1,9}$/.test(text)) usageError(usage, `--${name}: "${text}" is not a whole number`);
  return Number(text);
};
const rounds = count('rounds', values.rounds);
const pauseMs = count('pause-ms', values['pause-ms']);
let mix: Mix = DEFAULT_MIX;
try {
  if (values.mix) mix = parseMix(values.mix);
} catch (err) {
  usageError(usage, (err as Error).message);
}
const log = createLogger({ name: 'demo' });
const wanted = ['rpc-urls', 'chainClients', 'point', 'agent', 'relay', 'devnet'] as const;
const present = configOrExit().present;
const config = configOrExit({
  require: wanted.filter((s) => present.has(s) || s === 'rpc-urls' || s === 'chainClients'),
});
const abort = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => abort.abort());
log.info({ mix }, 'demo starting');
await runDemo(
  config,
  {
    rounds,
    mix,
    pauseMs,
    signal: abort.signal,
  },
  log,
);
log.info('demo finished');
