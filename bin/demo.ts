#!/usr/bin/env node
// `npm run demo [-- --rounds N --mix honest=4,3=2 --pause-ms 3000]`: swaps between devnet users and LPs
// against the system `npm start` runs (same config.toml), including every case 1–7.
import { parseArgs } from 'node:util';
import { loadConfig } from '../shared/config/index.js';
import { createLogger } from '../shared/logging/logger.js';
import { runDemo } from '../shared/demo/run.js';
import { DEFAULT_MIX, parseMix } from '../shared/demo/traffic.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '0' },
    mix: { type: 'string', default: '' },
    'pause-ms': { type: 'string', default: '3000' },
  },
});
const log = createLogger({ name: 'demo' });
const wanted = ['rpc-urls', 'chainClients', 'point', 'agent', 'relay', 'devnet'] as const;
const present = loadConfig().present;
const config = loadConfig({
  require: wanted.filter((s) => present.has(s) || s === 'rpc-urls' || s === 'chainClients'),
});
const abort = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => abort.abort());
log.info({ mix: values.mix ? parseMix(values.mix) : DEFAULT_MIX }, 'demo starting');
await runDemo(
  config,
  {
    rounds: Number(values.rounds),
    mix: values.mix ? parseMix(values.mix) : DEFAULT_MIX,
    pauseMs: Number(values['pause-ms']),
    signal: abort.signal,
  },
  log,
);
log.info('demo finished');
