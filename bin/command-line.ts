// The command line of the operator commands (bin/*.ts): one way to ask for help and one way to be refused.
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A command given arguments it does not take (what `npm run dead-letters` and the others have exited with). */
export const EXIT_USAGE = 2;

/**
 * `process.argv`'s arguments parsed strictly against `config` (node:util parseArgs). `--help` or `-h` prints
 * `usage` on stdout and exits 0 before anything is started. An unknown option, an option without its value
 * or, unless `config.allowPositionals`, a stray word prints what is wrong and the usage on stderr and exits
 * EXIT_USAGE: no stack trace, and nothing started.
 */
export function commandLine<T extends Omit<ParseArgsConfig, 'args' | 'strict'>>(
  usage: string,
  config: T,
): ReturnType<typeof parseArgs<T & { strict: true }>> {
  const argv = process.argv.slice(2);
  const end = argv.indexOf('--');
  const options = end === -1 ? argv : argv.slice(0, end);
  if (options.includes('--help') || options.includes('-h')) {
    console.log(usage);
    process.exit(0);
  }
  try {
    // Without `args` parseArgs reads process.argv past the script's path, as above, and keeps config's types.
    return parseArgs({ ...config, strict: true as const });
  } catch (err) {
    return usageError(usage, (err as Error).message);
  }
}

/** Refuses the command line: `problem` (when given) and the usage on stderr, exit EXIT_USAGE. */
export function usageError(usage: string, problem?: string): never {
  console.error(problem ? `error: ${problem}\n${usage}` : usage);
  process.exit(EXIT_USAGE);
}
