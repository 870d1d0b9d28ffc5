import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

/** One measured figure, with the baseline it is compared to in the same run. */
export interface BenchRow {
  measure: string;
  /** The figure with its unit, e.g. "13,800 msg/s". */
  value: string;
  /** The baseline's figure with its unit (measured in the same run). */
  baseline?: string;
  /** value / baseline. */
  ratio?: number;
  /** Acceptance target: the minimum ratio. */
  target?: number;
  /** A short remark (what the baseline is, why a figure is skipped). */
  note?: string;
}

export interface BenchSection {
  title: string;
  rows: BenchRow[];
}

/** What a suite module exports. */
export interface BenchSuite {
  run(): Promise<BenchSection[]>;
}

/** Where a figure was measured: filled in by the suites (the database) and by describeMachine(). */
export interface Environment {
  date: string;
  cpu: string;
  cores: number;
  memory: string;
  os: string;
  node: string;
  /** The machine's 1-minute load average when the suite finished (other work shares the cores). */
  load: number;
  /** e.g. "embedded PostgreSQL 17.6"; one per server a suite used. */
  databases: string[];
}

const databases = new Set<string>();

/** Called by the suites' database helpers with the server's source and version. */
export function noteDatabase(description: string): void {
  databases.add(description);
}

/** The machine, Node and the databases noted since the last call (which clears them). */
export function describeMachine(now = new Date()): Environment {
  const cpus = os.cpus();
  const used = [...databases];
  databases.clear();
  return {
    date: now.toISOString().replace(/\.\d+Z$/, 'Z'),
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memory: `${Math.round(os.totalmem() / 2 ** 30)} GiB`,
    os: `${os.type()} ${os.release()} (${os.arch()})`,
    node: process.version,
    load: os.loadavg()[0] ?? 0,
    databases: used,
  };
}

export function ratioText(ratio: number | undefined): string {
  return ratio === undefined ? '' : `${ratio.toFixed(2)}×`;
}

/** Whether a row meets its target; undefined when it has none (or no ratio to judge). */
export function meetsTarget(row: BenchRow): boolean | undefined {
  if (row.target === undefined || row.ratio === undefined) return undefined;
  return row.ratio >= row.target;
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** One suite's part of docs/benchmarks.md: where and when it ran, then one table per section. */
export function suiteMarkdown(name: string, sections: readonly BenchSection[], env: Environment): string {
  const lines = [
    `## ${name}`,
    '',
    `\`npm run bench -- ${name}\`, finished ${env.date}. Machine: ${env.cpu}, ${env.cores} cores, ` +
      `${env.memory} memory, ${env.os}, load average ${env.load.toFixed(1)}, Node ${env.node}` +
      (env.databases.length > 0 ? `, ${env.databases.join('; ')}.` : '.'),
  ];
  for (const section of sections) {
    lines.push('', `### ${section.title}`, '');
    lines.push('| measure | value | baseline | ratio | target | met |', '|---|---:|---:|---:|---:|:---:|');
    for (const row of section.rows) {
      const met = meetsTarget(row);
      const measure = row.note ? `${row.measure} (${row.note})` : row.measure;
      lines.push(
        `| ${[
          cell(measure),
          cell(row.value),
          cell(row.baseline ?? ''),
          ratioText(row.ratio),
          row.target === undefined ? '' : `≥ ${row.target}×`,
          met === undefined ? '' : met ? 'yes' : '**no**',
        ].join(' | ')} |`,
      );
    }
  }
  return lines.join('\n');
}

const HEADER = `# Benchmarks

Written by \`npm run bench\` (\`npm run bench -- <suite> …\` rewrites only those suites' parts and keeps the
others). Every ratio is the figure divided by its baseline, both measured in the same run on the same machine
and database; "target" is the acceptance minimum of that ratio where there is one. Figures vary with the
machine's load: compare ratios, not absolute rates, between runs. See the README's Benchmarks section for what
each suite measures.
`;

const begin = (name: string) => `<!-- bench:${name} begin -->`;
const end = (name: string) => `<!-- bench:${name} end -->`;

/**
 * Writes `file`: the suites of this run replace their own parts; parts of suites not run this time are kept
 * as they were. Parts appear in `order`, then any others the file had.
 */
export function writeReport(
  file: string,
  results: ReadonlyMap<string, string>,
  order: readonly string[],
): void {
  const previous = new Map<string, string>();
  if (existsSync(file)) {
    const text = readFileSync(file, 'utf8');
    const re = /<!-- bench:([\w-]+) begin -->\n([\s\S]*?)\n<!-- bench:\1 end -->/g;
    for (const m of text.matchAll(re)) previous.set(m[1]!, m[2]!);
  }
  const names = [...new Set([...order, ...previous.keys(), ...results.keys()])];
  const parts = names.flatMap((name) => {
    const body = results.get(name) ?? previous.get(name);
    return body === undefined ? [] : [`${begin(name)}\n${body}\n${end(name)}`];
  });
  writeFileSync(file, `${HEADER}\n${parts.join('\n\n')}\n`);
}
