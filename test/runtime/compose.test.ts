import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { services } from '../../services/index.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The `command:` of each service of docker-compose.yml, by container name. The file's own shape: containers
 * two spaces in under `services:`, their keys four spaces in, commands as one-line flow lists.
 */
function composeCommands(): Map<string, string[]> {
  const lines = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8').split('\n');
  const commands = new Map<string, string[]>();
  let inServices = false;
  let container: string | undefined;
  for (const line of lines) {
    if (/^\S/.test(line)) inServices = line.startsWith('services:');
    if (!inServices) continue;
    const name = /^ {2}([a-z0-9-]+):\s*$/.exec(line);
    if (name) container = name[1];
    const command = /^ {4}command:\s*\[(.*)\]\s*$/.exec(line);
    if (command && container)
      commands.set(
        container,
        command[1]!.split(',').map((part) => part.trim().replace(/^'(.*)'$/, '$1')),
      );
  }
  return commands;
}

describe('docker-compose.yml', () => {
  it('runs every service of the build (the devnet aside) in a container of its own, and only known ones', () => {
    const commands = composeCommands();
    const started = [...commands.values()].flat();
    // The devnet is a local chain for development; every other service belongs in production.
    const production = services.map((s) => s.name).filter((name) => name !== 'devnet');
    for (const name of production) expect(commands.get(name), `container for ${name}`).toEqual([name]);
    for (const name of started) expect(production).toContain(name);
  });
});
