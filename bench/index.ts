import path from 'node:path';
import { commandLine, usageError } from '../bin/command-line.js';
import { describeMachine, suiteMarkdown, writeReport, type BenchSuite } from './report.js';

// `npm run bench -- <name> [<name> …]`: runs the named benchmarks (all when none is named) and writes their
// figures to docs/benchmarks.md (BENCH_REPORT names another file; BENCH_REPORT=- writes none).
const suites: Record<string, () => Promise<BenchSuite>> = {
  bus: () => import('./bus.js'),
  crypto: () => import('./crypto.js'),
  connector: () => import('./connector.js'),
  relay: () => import('./relay.js'),
  classifier: () => import('./classifier.js'),
  points: () => import('./points.js'),
  replay: () => import('./replay.js'),
};

const usage = `usage: npm run bench [-- <suite> …]   (suites: ${Object.keys(suites).join(', ')}; none: all)`;
const asked = commandLine(usage, { allowPositionals: true }).positionals;
const names = asked.length > 0 ? asked : Object.keys(suites);
const unknown = names.filter((n) => !suites[n]);
if (unknown.length > 0) usageError(usage, `unknown benchmark "${unknown[0]}"`);
const report = process.env.BENCH_REPORT ?? path.resolve(import.meta.dirname, '../docs/benchmarks.md');
const results = new Map<string, string>();
for (const name of names) {
  describeMachine(); // forget databases noted before this suite
  const sections = await (await suites[name]!()).run();
  results.set(name, suiteMarkdown(name, sections, describeMachine()));
  // Written after each suite, so a later suite's failure does not lose the figures already measured.
  if (report !== '-') writeReport(report, results, Object.keys(suites));
}
if (report !== '-') console.log(`\nreport: ${path.relative(process.cwd(), report)}`);
