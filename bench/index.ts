// `npm run bench -- <name> [<name> …]`: runs the named benchmarks (all when none is named).
const suites: Record<string, () => Promise<{ run(): Promise<unknown> }>> = {
  bus: () => import('./bus.js'),
  crypto: () => import('./crypto.js'),
  connector: () => import('./connector.js'),
  relay: () => import('./relay.js'),
  classifier: () => import('./classifier.js'),
  points: () => import('./points.js'),
  replay: () => import('./replay.js'),
};

const asked = process.argv.slice(2);
const names = asked.length > 0 ? asked : Object.keys(suites);
for (const name of names) {
  const load = suites[name];
  if (!load) {
    console.error(`unknown benchmark "${name}" (known: ${Object.keys(suites).join(', ')})`);
    process.exit(2);
  }
  await (await load()).run();
}
