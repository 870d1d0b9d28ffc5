import { Registry } from 'prom-client';
import { waitFor } from '../../test/support/wait.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { databaseForSuite } from '../../test/support/database.js';
import { HttpDidSource } from './did-source.js';
import { batchContext, syntheticEngine } from './judge-test-kit.js';
import { classifierMetrics } from './metrics.js';
import { classifierMigrations } from './migrations.js';
import { classifierTables } from './tables.js';
import { DST } from './swap-timeline.js';

const address = (i: number) => '0x' + i.toString(16).padStart(40, '0');
const didSource = () =>
  new HttpDidSource({
    url: 'http://did.invalid',
    ttlMs: 1,
    log: createLogger({ level: 'silent' }),
    onAnswer: async () => undefined,
    fetch: (async () => new Response(JSON.stringify({ code: 0, data: [] }), { status: 200 })) as typeof fetch,
  });
const cacheSize = (did: HttpDidSource) => (did as unknown as { cache: Map<string, unknown> }).cache.size;

describe('classifier: what an operator watches, and what it keeps', () => {
  const db = databaseForSuite([classifierMigrations]);

  it('classifier_chain_clock_seconds shows every chain clock after a restart, moving or not', async () => {
    const schema = 'signals_clock';
    const first = await syntheticEngine(db.pool, schema, undefined, {
      metrics: classifierMetrics(new Registry(), db.pool, classifierTables(schema)),
    });
    await first.engine.handleBatch(
      [
        {
          kind: 'height',
          id: 'h1',
          height: {
            chainId: DST.chainId,
            stream: 'swap',
            height: 1,
            blockTimestamp: 5_000,
            lastEventId: null,
          },
        },
      ],
      batchContext(),
    );
    // A restart, the chain's heights stopped since: the clock is read from the table.
    const registry = new Registry();
    classifierMetrics(registry, db.pool, classifierTables(schema));
    expect(await registry.getSingleMetricAsString('classifier_chain_clock_seconds')).toContain(
      `classifier_chain_clock_seconds{chain="${DST.chainId}",stream="swap"} 5000`,
    );
  });

  it('the DID cache drops an expired answer when it is read', async () => {
    const did = didSource();
    for (let i = 0; i < 1_000; i++) did.request(address(i));
    // Every answer in (under load they take a while), then older than the ttl (1 ms).
    await waitFor(() => cacheSize(did) === 1_000, 'every answer cached', 10_000);
    await new Promise((r) => setTimeout(r, 20));
    for (let i = 0; i < 1_000; i++) expect(did.names(address(i))).toBeUndefined();
    did.stop();
    expect(cacheSize(did)).toBe(0);
  });

  it('the DID cache is swept of expired answers never read again, so it does not grow for ever', async () => {
    const did = didSource();
    for (let i = 0; i < 12_000; i++) did.request(address(i));
    await new Promise((r) => setTimeout(r, 1_500));
    did.stop();
    expect(cacheSize(did)).toBeLessThan(10_000);
  });
});
