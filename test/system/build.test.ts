import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import Fastify from 'fastify';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/processes.js';

/**
 * The Dockerfile's build stage, without Docker: its COPY lines into a fresh directory (sharing node_modules
 * for `npm ci`), then `npm run build`. The image runs dist/ alone, so what dist/ lacks is missing there.
 */
describe("npm run build on the Dockerfile's build context", () => {
  let dir: string;
  let build: { code: number; output: string };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-build-'));
    const dockerfile = await readFile(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
    // The build stage: from the first FROM up to the next one.
    const stage = dockerfile.split(/^FROM /m)[1]!;
    for (const line of stage.split('\n').filter((l) => /^COPY (?!--)/.test(l))) {
      const [, ...args] = line.trim().split(/\s+/);
      const to = path.join(dir, args.pop()!);
      for (const from of args) {
        const into = args.length > 1 || to.endsWith(path.sep) ? path.join(to, path.basename(from)) : to;
        await cp(path.join(PROJECT_ROOT, from), into, { recursive: true });
      }
    }
    await symlink(path.join(PROJECT_ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    build = await promisify(execFile)('npm', ['run', 'build'], { cwd: dir }).then(
      ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
      (err: { code?: number; stdout?: string; stderr?: string }) => ({
        code: err.code ?? 1,
        output: `${err.stdout ?? ''}${err.stderr ?? ''}`,
      }),
    );
  }, 180_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('compiles', () => {
    expect(build.output.split('\n').filter((l) => /error TS/.test(l))).toEqual([]);
    expect(build.code).toBe(0);
  });

  it('serves the dashboard page, script and styles from dist/', async () => {
    expect(build.code).toBe(0);
    const compiled = path.join(dir, 'dist/services/points/dashboard-routes.js');
    const { registerDashboard } = (await import(
      pathToFileURL(compiled).href
    )) as typeof import('../../services/points/dashboard-routes.js');
    const app = Fastify();
    try {
      // The page and its files need no database.
      await registerDashboard(app, {
        db: {} as never,
        metrics: new Registry(),
        windowDays: 90,
        queries: {} as never,
      });
      for (const [url, type] of [
        ['/dashboard/', /^text\/html/],
        ['/dashboard/dashboard.js', /javascript/],
        ['/dashboard/dashboard.css', /^text\/css/],
        ['/dashboard/vendor/chart.umd.min.js', /javascript/],
      ] as const) {
        const response = await app.inject(url);
        expect(response.statusCode, url).toBe(200);
        expect(response.headers['content-type'], url).toMatch(type);
      }
    } finally {
      await app.close();
    }
  });
});
