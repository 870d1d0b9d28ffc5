import { readFile } from 'node:fs/promises';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

/**
 * package.json's `engines.node` is what an operator installs; every package a production install brings must
 * run on its lowest version. content-disposition 3 (under @fastify/static, the dashboard) wants Node ≥ 22 and is
 * an ES module that @fastify/static require()s, which Node 20 before 20.19 refuses: the Points service would not
 * start there (package.json `overrides` pin the CommonJS 2.x).
 */
describe('engines', () => {
  it('every production package runs on the lowest Node version package.json admits', async () => {
    const manifest = JSON.parse(await readFile('package.json', 'utf8')) as { engines: { node: string } };
    const lock = JSON.parse(await readFile('package-lock.json', 'utf8')) as {
      packages: Record<string, { dev?: boolean; engines?: { node?: string } | string[] }>;
    };
    const lowest = semver.minVersion(manifest.engines.node)!.version;
    const refusing = Object.entries(lock.packages).flatMap(([path, entry]) => {
      const wants = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      return path !== '' && entry.dev !== true && wants !== undefined && !semver.satisfies(lowest, wants)
        ? [`${path} wants node ${wants}`]
        : [];
    });
    expect(lowest).toBe('20.19.0');
    expect(refusing).toEqual([]);
  });
});
