import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnTs } from '../support/processes.js';

/**
 * Every operator command (bin/command-line.ts) as an operator mistypes it: `--help` prints the usage and
 * exits 0, a wrong argument is refused with what is wrong, the usage and exit 2, and in both cases nothing is
 * started. The commands are pointed at a database that does not exist and a config file that is not there:
 * a command that went past its arguments would fail differently (or, for the demo, play against nothing).
 */
describe('operator commands: --help and refused arguments', () => {
  let dir: string;
  const run = async (entry: string, args: string[]) => {
    const child = spawnTs(entry, args, {
      ...process.env,
      CONFIG_PATH: path.join(dir, 'missing.toml'),
      DATABASE_URL: 'postgres://nobody:nothing@127.0.0.1:1/none',
      KAFKA_BROKERS: '',
    });
    const { code } = await child.exited;
    return { code, output: child.output() };
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-command-line-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const commands = [
    {
      entry: 'bin/start.ts',
      usage: 'usage: npm start',
      wrong: ['--demos'],
      problem: "Unknown option '--demos'",
    },
    // A mistyped service name is a wrong word too: refused as one (exit 2, the usage naming the services),
    // before the configuration is read, not as a configuration error (78) the file has nothing to do with.
    {
      entry: 'bin/start.ts',
      usage: 'usage: npm start',
      wrong: ['pionts'],
      problem: 'unknown service "pionts"',
    },
    {
      entry: 'bin/demo.ts',
      usage: 'usage: npm run demo',
      wrong: ['--rounds', 'two'],
      problem: '"two" is not a whole number',
    },
    {
      entry: 'bin/demo.ts',
      usage: 'usage: npm run demo',
      wrong: ['--mix', 'case9=1'],
      problem: '"case9=1" is not kind=count',
    },
    {
      entry: 'bin/devnet.ts',
      usage: 'usage: npm run devnet',
      wrong: ['--chains', '97,x'],
      problem: 'not a chain id list',
    },
    {
      entry: 'bin/replay.ts',
      usage: 'usage: npm run replay',
      wrong: ['--kep'],
      problem: "Unknown option '--kep'",
    },
    {
      entry: 'bin/dead-letters.ts',
      usage: 'usage: npm run dead-letters',
      wrong: ['redrive', 'chain.event'],
      problem: 'unknown topic chain.event',
    },
    {
      entry: 'bench/index.ts',
      usage: 'usage: npm run bench',
      wrong: ['bsu'],
      problem: 'unknown benchmark "bsu"',
    },
    {
      entry: 'bin/classifier-holds.ts',
      usage: 'usage: npm run classifier-holds',
      wrong: ['--all'],
      problem: "Unknown option '--all'",
    },
    // README (Scripts): a wrong word is refused "with what is wrong and the usage", not the usage alone.
    {
      entry: 'bin/classifier-holds.ts',
      usage: 'usage: npm run classifier-holds',
      wrong: ['release'],
      problem: 'release needs one event id',
    },
    {
      entry: 'bin/classifier-holds.ts',
      usage: 'usage: npm run classifier-holds',
      wrong: ['relase', 'x'],
      problem: 'unknown command "relase"',
    },
    {
      entry: 'bin/dead-letters.ts',
      usage: 'usage: npm run dead-letters',
      wrong: ['redrive'],
      problem: 'redrive needs at least one topic',
    },
    {
      entry: 'bin/dead-letters.ts',
      usage: 'usage: npm run dead-letters',
      wrong: ['redrve', 'chain.events'],
      problem: 'unknown command "redrve"',
    },
  ];

  for (const { entry, usage } of new Map(commands.map((c) => [c.entry, c])).values()) {
    it(`${entry} --help prints its usage and exits 0`, async () => {
      for (const help of ['--help', '-h']) {
        const { code, output } = await run(entry, [help]);
        expect(code).toBe(0);
        expect(output.trim().startsWith(usage)).toBe(true);
      }
    });
  }

  for (const { entry, usage, wrong, problem } of commands) {
    it(`${entry} ${wrong.join(' ')} is refused with what is wrong and exit 2`, async () => {
      const { code, output } = await run(entry, wrong);
      expect(code).toBe(2);
      expect(output).toContain(`error: `);
      expect(output).toContain(problem);
      expect(output).toContain(usage);
      // A message, not a crash.
      expect(output).not.toMatch(/^\s+at /m);
    });
  }
});

/**
 * README (Configuration): bad configuration ends the process with exit code 78 and one line per problem, for
 * every command that reads config.toml. A command that let the loader's error through printed a stack trace
 * and exited 1, which a supervisor or a runbook step cannot tell from a failure of the work itself.
 */
describe('operator commands: a configuration file that is not there', () => {
  const commands: Array<[string, string[]]> = [
    ['bin/start.ts', []],
    ['bin/demo.ts', ['--rounds', '1']],
    ['bin/replay.ts', []],
    ['bin/dead-letters.ts', []],
    ['bin/classifier-holds.ts', []],
  ];
  for (const [entry, args] of commands) {
    it(`${entry} exits 78 with one line naming the problem`, async () => {
      const child = spawnTs(entry, args, {
        ...process.env,
        CONFIG_PATH: path.join(os.tmpdir(), `otmoic-no-such-config-${process.pid}.toml`),
        KAFKA_BROKERS: '',
      });
      const { code } = await child.exited;
      const output = child.output();
      expect(output).toContain('config error: CONFIG_PATH: file not found');
      expect(output).not.toMatch(/^\s+at /m);
      expect(code).toBe(78);
    });
  }
});
