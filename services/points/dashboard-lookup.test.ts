/**
 * The dashboard's lookup in headless Chromium: an LP whose id looks like an address (`0x` + 40 hex) opened
 * from the ranking is looked up as an LP, not as a user of that address; the form's kind selects either.
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath } from '../../test/support/chromium.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { pointsMigrations } from './migrations.js';
import {
  hex32,
  pointTestConfig,
  publishVerdict,
  publishViolation,
  startTestPoints,
  userAddress,
  verdictPayload,
  violationPayload,
} from './test-harness.js';

const NOW = 1_800_000_000;
// An LP id that is also a well-formed address (LP ids are free text).
const LP = userAddress(0x1b);
const executablePath = chromiumPath();

describe.skipIf(!executablePath)('dashboard lookup (headless Chromium)', () => {
  let db: TestDatabase;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  let browser: Browser;

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    points = await startTestPoints(db, pointTestConfig(), { nowSeconds: () => NOW });
    await publishVerdict(
      points.bus,
      verdictPayload({
        bid: hex32(1),
        lpId: LP,
        outcome: 'violation',
        party: 'lp',
        case: 3,
        blockTime: NOW - 60,
      }),
    );
    await publishViolation(
      points.bus,
      violationPayload({ bid: hex32(1), party: 'lp', subject: LP, blockTime: NOW - 60 }),
    );
    await waitFor(
      async () => (await points.get(`/lp-deduction-records?lp_id=${LP}`)).body.records?.length === 1,
      'the LP deduction applied',
    );
    browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await points?.close();
    await db?.drop();
  });

  it('opens an address-like LP id from the ranking as an LP, and the form looks it up as either kind', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(`${points.base}/dashboard/`);
    await page.locator(`#ranking a[data-lp="${LP}"]`).click();
    await page.locator('#records tbody tr').first().waitFor({ timeout: 10_000 });
    expect(await page.locator('#summary').textContent()).toMatch(new RegExp(`^LP ${LP}: .*1 violations`));
    expect(await page.locator('#records tbody tr').count()).toBe(1);
    expect(await page.locator('#records a').getAttribute('href')).toBe(
      `/complaint?bid=${encodeURIComponent(hex32(1))}`,
    );

    // The form: by default an address is a user (no deductions); "LP" looks the same text up as an LP.
    await page.fill('#subject', LP);
    await page.selectOption('#kind', '');
    await page.click('#lookup button');
    await page.locator('#summary', { hasText: `User ${LP}` }).waitFor();
    expect(await page.locator('#records tbody tr').count()).toBe(0);
    await page.selectOption('#kind', 'lp');
    await page.click('#lookup button');
    await page.locator('#summary', { hasText: `LP ${LP}` }).waitFor();
    expect(await page.locator('#records tbody tr').count()).toBe(1);

    // A link with the kind: ?lookup=…&kind=lp.
    await page.goto(`${points.base}/dashboard/?lookup=${LP}&kind=lp`);
    await page.locator('#summary', { hasText: `LP ${LP}` }).waitFor();
    expect(problems).toEqual([]);
  }, 60_000);
});
