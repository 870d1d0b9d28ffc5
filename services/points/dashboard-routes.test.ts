/**
 * The dashboard's responses (page, files, JSON routes) carry the browser security headers; the public Points
 * routes, read by programs, do not need them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { pointsMigrations } from './migrations.js';
import { pointTestConfig, startTestPoints } from './test-harness.js';

const DASHBOARD_CSP = "default-src 'self'; frame-ancestors 'none'; object-src 'none'; base-uri 'none'";

describe('the dashboard security headers', () => {
  let db: TestDatabase;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    points = await startTestPoints(db, pointTestConfig(), { consume: false });
  });
  afterAll(async () => {
    await points?.close();
    await db?.drop();
  });

  it('the page, its files and its JSON routes (answers and errors) carry them; the public routes not', async () => {
    for (const url of [
      '/dashboard/',
      '/dashboard/dashboard.js',
      '/dashboard/vendor/chart.umd.min.js',
      '/dashboard/verdicts',
      '/dashboard/verdicts?since=abc',
      '/dashboard/pipeline',
      '/dashboard',
    ]) {
      const response = await fetch(`${points.base}${url}`, { redirect: 'manual' });
      expect(response.status, url).toBeLessThan(url.includes('abc') ? 500 : 400);
      expect(response.headers.get('x-content-type-options'), url).toBe('nosniff');
      expect(response.headers.get('content-security-policy'), url).toBe(DASHBOARD_CSP);
      expect(response.headers.get('x-frame-options'), url).toBe('DENY');
      expect(response.headers.get('referrer-policy'), url).toBe('no-referrer');
    }
    const page = await fetch(`${points.base}/dashboard/`);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect((await fetch(`${points.base}/lp-ranking`)).headers.get('content-security-policy')).toBeNull();
  });

  it("answers the file server's refusals in Points' vocabulary, each with its own status and code", async () => {
    const answer = async (url: string, init: RequestInit = {}) => {
      const response = await fetch(`${points.base}${url}`, init);
      return { status: response.status, body: await response.json() };
    };
    // A path the file server refuses (403) names no resource: answered word for word as an unknown path.
    expect(await answer('/dashboard//')).toEqual({
      status: 404,
      body: { code: 32004, message: 'no route GET /dashboard//; see /openapi.json' },
    });
    expect(await answer('/no-such-route')).toEqual({
      status: 404,
      body: { code: 32004, message: 'no route GET /no-such-route; see /openapi.json' },
    });
    expect(await answer('/dashboard/dashboard.js', { headers: { range: 'bytes=99999999-' } })).toMatchObject({
      status: 416,
      body: { code: 32014 },
    });
    expect(
      await answer('/dashboard/dashboard.js', { headers: { 'if-match': '"not-this-one"' } }),
    ).toMatchObject({
      status: 412,
      body: { code: 32013 },
    });
    // A body Points never reads, malformed: a bad request, not a bad query.
    expect(
      await answer('/lp-ranking', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{',
      }),
    ).toMatchObject({ status: 400, body: { code: 32002 } });
  });
});
