#!/usr/bin/env node
// `npm run dead-letters`: every topic's dead letters and how many were not re-sent yet.
// `npm run dead-letters -- redrive <topic> …`: re-sends a topic's dead letters not re-sent before (after the
// cause of their failure is fixed); see shared/bus/redrive.ts. Exits 1 when any was refused or failed (moved on
// to <topic>.dlq.dlq). Shares the database of a running `npm start`.
import { deadLetterCounts, redriveDeadLetters, type RedriveReport } from '../shared/bus/redrive.js';
import { operatorInfrastructure, runCommand } from './operator.js';
import { allTopics } from '../topics/index.js';
import { progressBar } from './progress.js';
import { commandLine, usageError } from './command-line.js';

// Every topic of the services, and their dead-letter topics (whose own dead letters go one level down).
const topics = allTopics.flatMap((t) => [t.name, `${t.name}.dlq`]);
const usage = `usage: npm run dead-letters [-- redrive <topic> …]   (topics: ${topics.join(', ')})`;

const [command, ...named] = commandLine(usage, { allowPositionals: true }).positionals;
const unknown = named.filter((n) => !topics.includes(n));
if (unknown.length > 0) usageError(usage, `unknown topic ${unknown.join(', ')}`);
// Refused with what is wrong, not the usage alone (README, Scripts): a runbook typo must say which word.
if (command !== undefined && command !== 'list' && command !== 'redrive')
  usageError(usage, `unknown command ${JSON.stringify(command)}`);
if (command === 'redrive' && named.length === 0) usageError(usage, 'redrive needs at least one topic');
if (command !== 'redrive' && named.length > 0) usageError(usage, `${command} takes no topics`);

const { infra } = await operatorInfrastructure('dead-letters');
await runCommand('dead-letters', infra, async () => {
  if (command === 'redrive') {
    const reports: RedriveReport[] = [];
    for (const topic of named) {
      const bar = progressBar(`redrive ${topic}`);
      reports.push(
        await redriveDeadLetters({
          bus: infra.bus,
          pool: infra.db,
          topic,
          onProgress: (done, left) => bar.update(left, done),
        }),
      );
    }
    console.log(JSON.stringify(reports, null, 2));
    // A script or runbook step takes the exit code, not the report: dead letters not sent home are a failure.
    const notSent = reports.reduce((n, r) => n + r.refused + r.failed, 0);
    if (notSent > 0) {
      console.error(
        `${notSent} dead letter(s) were not re-sent (refused or failed): they are in <topic>.dlq.dlq (see the report)`,
      );
      process.exitCode = 1;
    }
  } else {
    const counts = await Promise.all(topics.map((topic) => deadLetterCounts(infra.bus, topic)));
    console.log(
      JSON.stringify(
        counts.map((c) => ({
          topic: c.topic,
          deadLetters: Number(c.deadLetters),
          notRedriven: Number(c.notRedriven),
        })),
        null,
        2,
      ),
    );
  }
});
