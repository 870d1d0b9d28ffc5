#!/usr/bin/env node
// `npm run classifier-holds`: the chain events the Classifier dead-lettered and never applied; each holds its
// chain's clock (services/classifier/holds.ts). `npm run classifier-holds -- release <event id>`: lets the
// Classifier's next batch move the clock past one that can never apply (fix and redrive the others instead).
// Shares the database of a running `npm start`.
import { listMissingEvents, releaseMissingEvent } from '../services/classifier/holds.js';
import { classifierTables } from '../services/classifier/tables.js';
import { operatorInfrastructure, runCommand } from './operator.js';
import { commandLine, usageError } from './command-line.js';

const usage = 'usage: npm run classifier-holds [-- release <event id>]';
const [command, ...rest] = commandLine(usage, { allowPositionals: true }).positionals;
// Refused with what is wrong, not the usage alone (README, Scripts): a runbook typo must say which word.
if (command !== undefined && command !== 'list' && command !== 'release')
  usageError(usage, `unknown command ${JSON.stringify(command)}`);
if (command === 'list' && rest.length > 0) usageError(usage, 'list takes no arguments');
if (command === 'release' && rest.length !== 1)
  usageError(usage, `release needs one event id (given ${rest.length})`);

const { infra } = await operatorInfrastructure('classifier-holds');
const tables = classifierTables();
let code = 0;
await runCommand('classifier-holds', infra, async () => {
  if (command === 'release') {
    const eventId = rest[0]!;
    const rows = await releaseMissingEvent(infra.db, tables, eventId);
    if (rows === 0) {
      console.error(
        `no dead-lettered event ${JSON.stringify(eventId)} holds a clock (npm run classifier-holds lists them)`,
      );
      code = 1;
    } else console.log(JSON.stringify({ released: eventId, streams: rows }));
  } else {
    console.log(JSON.stringify(await listMissingEvents(infra.db, tables), null, 2));
  }
});
process.exit(code);
