/**
 * Browser apps of another origin (the Otmoic web app runs the SDK in the page): in headless Chromium, a page
 * of a listed origin reads Points' scores and files a complaint with the Agent (a preflighted POST with
 * `x-api-key`), refusals included; a page of any other origin gets nothing. Off by default.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentMigrationSets } from '../../services/agent/migrations.js';
import { agentTestConfig, startTestAgent } from '../../services/agent/test-harness.js';
import { pointsMigrations } from '../../services/points/migrations.js';
import { pointTestConfig, startTestPoints } from '../../services/points/test-harness.js';
import { chromiumPath } from '../support/chromium.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const KEY = 'agent-api-key-0123456789abcdef';
const executablePath = chromiumPath();

/** A page's own origin: an HTTP server with one empty page. */
async function startOrigin(): Promise<{ origin: string; server: Server }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** What a page's fetch gave: the status and body, or the browser's refusal. */
type Fetched = { status: number; body: { code?: number } } | { refused: string };

describe.skipIf(!executablePath)('CORS for browser apps (headless Chromium)', () => {
  let agentDb: TestDatabase;
  let pointsDb: TestDatabase;
  let agent: Awaited<ReturnType<typeof startTestAgent>>;
  let closedAgent: Awaited<ReturnType<typeof startTestAgent>>;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  let listed: Awaited<ReturnType<typeof startOrigin>>;
  let other: Awaited<ReturnType<typeof startOrigin>>;
  let browser: Browser;

  beforeAll(async () => {
    [agentDb, pointsDb, listed, other] = await Promise.all([
      createTestDatabase(agentMigrationSets),
      createTestDatabase([pointsMigrations]),
      startOrigin(),
      startOrigin(),
    ]);
    agent = await startTestAgent(agentDb, agentTestConfig({ apiKeys: [KEY], corsOrigins: [listed.origin] }));
    // The default: no origin listed.
    closedAgent = await startTestAgent(agentDb, agentTestConfig({ apiKeys: [KEY] }));
    points = await startTestPoints(pointsDb, pointTestConfig({ corsOrigins: [listed.origin] }));
    browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await Promise.all([agent?.close(), closedAgent?.close(), points?.close()]);
    listed?.server.close();
    other?.server.close();
    await Promise.all([agentDb?.drop(), pointsDb?.drop()]);
  });

  /** Each request as the page at `origin` makes it. */
  async function fetchFrom(
    origin: string,
    requests: Array<{ url: string; method?: string; headers?: Record<string, string>; body?: string }>,
  ): Promise<Fetched[]> {
    const page = await browser.newPage();
    try {
      await page.goto(origin);
      return await page.evaluate(
        (all) =>
          Promise.all(
            all.map(async (r) => {
              try {
                const response = await fetch(r.url, { method: r.method, headers: r.headers, body: r.body });
                return { status: response.status, body: (await response.json()) as { code?: number } };
              } catch (err) {
                return { refused: String(err) };
              }
            }),
          ),
        requests,
      );
    } finally {
      await page.close();
    }
  }

  const complaint = (base: string) => ({
    url: `${base}/submit-complaint`,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    body: JSON.stringify({ params: [] }),
  });

  it('a listed origin reads scores and files a complaint (preflighted, with its API key); refusals are readable', async () => {
    const [ranking, submitted, status] = await fetchFrom(listed.origin, [
      { url: `${points.base}/lp-ranking` },
      complaint(agent.base),
      { url: `${agent.base}/complaint-status?bid=nonsense` },
    ]);
    expect(ranking).toMatchObject({ status: 200 });
    // Past the preflight and the key, the body is read and refused with the Agent's own code.
    expect(submitted).toMatchObject({ status: 400, body: { code: expect.any(Number) } });
    expect((submitted as { body: { code: number } }).body.code).toBeGreaterThan(41_000);
    expect(status).toMatchObject({ status: 400 });
  });

  it('any other origin, and any origin while none is listed, gets nothing', async () => {
    const results = await fetchFrom(other.origin, [
      { url: `${points.base}/lp-ranking` },
      complaint(agent.base),
      { url: `${agent.base}/complaint-status?bid=nonsense` },
    ]);
    const closed = await fetchFrom(listed.origin, [
      complaint(closedAgent.base),
      { url: `${closedAgent.base}/status` },
    ]);
    for (const result of [...results, ...closed])
      expect(result).toMatchObject({ refused: expect.stringMatching(/fetch/i) });
  });

  it('warns at start-up when an IP allow-list alone guards the complaints of browser apps', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const warning = /agent\.corsOrigins with agent\.allowIps and no agent\.apiKeys/;
    const ipOnly = await startTestAgent(
      agentDb,
      agentTestConfig({ allowIps: ['127.0.0.0/8'], corsOrigins: [listed.origin] }),
      log,
    );
    await ipOnly.close();
    expect(lines.filter((l) => warning.test(l))).toHaveLength(1);
    // With API keys (the listed agent of these tests) a page cannot submit without one: no warning.
    const keyed = await startTestAgent(
      agentDb,
      agentTestConfig({ apiKeys: [KEY], allowIps: ['127.0.0.0/8'], corsOrigins: [listed.origin] }),
      log,
    );
    await keyed.close();
    expect(lines.filter((l) => warning.test(l))).toHaveLength(1);
  });

  it('a preflight asks nothing of the access checks and sends nothing; without CORS it is an unknown route', async () => {
    const preflight = (base: string, origin: string) =>
      fetch(`${base}/submit-complaint`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-api-key',
        },
      });
    const allowed = await preflight(agent.base, listed.origin);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(listed.origin);
    expect(allowed.headers.get('access-control-allow-headers')).toBe('content-type, x-api-key');
    expect(allowed.headers.get('access-control-allow-credentials')).toBeNull();
    const closedAnswer = await preflight(closedAgent.base, listed.origin);
    expect(closedAnswer.status).toBe(404);
    expect(closedAnswer.headers.get('access-control-allow-origin')).toBeNull();
    expect(await closedAnswer.json()).toMatchObject({
      code: expect.any(Number),
      message: expect.any(String),
    });
    const { rows } = await agentDb.pool.query('SELECT count(*)::int AS n FROM agent_complaints');
    expect(rows[0].n).toBe(0);
  });
});
