import { existsSync } from 'node:fs';

/** Debian's chromium (`apt-get install -y chromium`; .ci/run installs it), or CHROMIUM_PATH; undefined when absent. */
export function chromiumPath(): string | undefined {
  return [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
    (p): p is string => p !== undefined && p !== '' && existsSync(p),
  );
}
