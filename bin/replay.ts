#!/usr/bin/env node
// `npm run replay [-- <name> …] [--keep]`: rebuilds a consumer's projections (all of them, at once, when none
// is named) from the beginning of its input topics
// into fresh tables and compares them with the live ones (exit code 1 when they differ). It shares the
// database of a running `npm start` rather than restarting it.
import { operatorInfrastructure, runCommand } from './operator.js';
import { progressBar } from './progress.js';
import { replayers } from './replayers.js';
import { commandLine, usageError } from './command-line.js';

const usage = `usage: npm run replay [-- <${Object.keys(replayers).join('|')}> …] [--keep]
  with no name, the whole pipeline in its order; --keep keeps the rebuilt tables`;
const { values, positionals: named } = commandLine(usage, {
  options: { keep: { type: 'boolean', default: false } },
  allowPositionals: true,
});
const keep = values.keep;
// No name: the whole pipeline, in its order (classifier, then points). A name given twice is replayed once,
// as `npm start` starts a service named twice once: a second replay of the same tables would tell nothing more.
const names = named.length > 0 ? [...new Set(named)] : Object.keys(replayers);
const unknown = names.filter((n) => !(n in replayers));
if (unknown.length > 0) usageError(usage, `no replayer named ${unknown.join(', ')}`);

const { config, log, infra } = await operatorInfrastructure('replay', {
  require: names.flatMap((n) => replayers[n]!.sections),
  migrations: names.flatMap((n) => replayers[n]!.migrations),
});
let identical = true;
await runCommand('replay', infra, async () => {
  // One progress bar over every replayer's messages; the replayers run at once.
  const bar = progressBar(`replay (${names.join(' + ')})`);
  const progress = new Map(names.map((n) => [n, { done: 0, left: 0 }]));
  const draw = () => {
    let done = 0;
    let left = 0;
    for (const p of progress.values()) {
      done += p.done;
      left += p.left;
    }
    bar.update(left, done);
  };
  const reports = await Promise.all(
    names.map(async (name) => {
      const started = Date.now();
      const report = await replayers[name]!.replay({
        config,
        db: infra.db,
        bus: infra.bus,
        log,
        keep,
        onProgress: (done, left) => {
          progress.set(name, { done, left });
          draw();
        },
      });
      return { replay: name, ms: Date.now() - started, ...report };
    }),
  );
  for (const report of reports) {
    identical &&= report.identical;
    console.log(JSON.stringify(report, null, 2));
  }
});
process.exit(identical ? 0 : 1);
