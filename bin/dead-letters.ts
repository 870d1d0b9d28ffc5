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

// Every topic of the services, and the dead-letter topics whose own dead letters the notifier counts (a dead
// letter whose redrive fails goes one level down: <topic>.dlq.dlq, then <topic>.dlq.dlq.dlq). Listed with only
// one level below the topics, a dead letter of a failed `redrive <topic>.dlq` was told by the notifier but
// neither listed nor re-sent: the redrive that brings it home was refused as an unknown topic.
const LEVELS = 3;
const topics = allTopics.flatMap((t) => Array.from({ length: LEVELS }, (_, k) => t.name + '.dlq'.repeat(k)));
/** A topic of the services or one of its dead-letter topics, at any level (a redrive can fail at any level). */
const redrivable = (name: string) =>
  allTopics.some((t) => name.startsWith(t.name) && /^(\.dlq)*$/.test(name.slice(t.name.length)));
const usage = `usage: npm run dead-letters [-- redrive <topic> …]   (topics: ${topics.join(', ')}; deeper .dlq levels too)`;

const [command, ...named] = commandLine(usage, { allowPositionals: true }).positionals;
const unknown = named.filter((n) => !redrivable(n));
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
