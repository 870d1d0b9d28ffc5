import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayVectors } from '../../test/fixtures/otmoic-relay-vectors.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { relayMigrationSets } from './migrations.js';
import { relayTestConfig, startTestRelay } from './test-harness.js';

type Relay = Awaited<ReturnType<typeof startTestRelay>>;
type Json = Record<string, unknown>;

const PREFIX = '/evm-client-9006/relay';
const calldata = relayVectors.calldata as unknown as { route: string; request: Json }[];
/** Valid bodies per route, the seeds the fuzzer mutates. */
const seeds: [string, Json][] = [
  ['/get_hashlock', relayVectors.hashlock[0]!.request as Json],
  ['/get_signer_from_eip712', relayVectors.eip712.cases[0]!.request as unknown as Json],
  ['/single_swap/get_signer_from_eip712', relayVectors.eip712.single_swap.request as unknown as Json],
  ['/get_system_fee', {}],
  ...calldata.map((v) => [`/behalf/${v.route.split('/behalf/')[1]}`, v.request] as [string, Json]),
];

/** Replaces, deletes or adds one value somewhere in a JSON object (nested objects included). */
function mutate(value: Json, path: string[], replacement: unknown, mode: 'set' | 'delete'): Json {
  const copy: Json = { ...value };
  const [head, ...rest] = path;
  if (head === undefined) return copy;
  const child = copy[head];
  if (rest.length > 0 && child !== null && typeof child === 'object' && !Array.isArray(child)) {
    copy[head] = mutate(child as Json, rest, replacement, mode);
  } else if (mode === 'delete') {
    delete copy[head];
  } else {
    copy[head] = replacement;
  }
  return copy;
}

function paths(value: unknown, prefix: string[] = []): string[][] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [prefix];
  return [prefix, ...Object.entries(value).flatMap(([k, v]) => paths(v, [...prefix, k]))].filter(
    (p) => p.length > 0,
  );
}

const nasty = fc.oneof(
  fc.anything({ maxDepth: 2 }),
  fc.constantFrom(
    '',
    '0x',
    '0x0',
    '-1',
    '1e3',
    '1.5',
    'NaN',
    ' 1',
    '0x' + 'g'.repeat(64),
    '9'.repeat(120),
    '__proto__',
    'constructor',
  ),
  fc.double(),
  fc.bigInt({ min: -(1n << 300n), max: 1n << 300n }).map(String),
  fc.string({ unit: 'binary', maxLength: 50 }),
);

const mutatedBody = fc.constantFrom(...seeds).chain(([route, seed]) =>
  fc
    .tuple(
      fc.constantFrom(...paths(seed), ['added_key']),
      nasty,
      fc.constantFrom<'set' | 'delete'>('set', 'set', 'delete'),
      fc.option(fc.tuple(fc.string({ maxLength: 20 }), nasty)),
    )
    .map(([path, replacement, mode, extra]) => {
      const body = mutate(seed, path, replacement, mode);
      return { route, payload: JSON.stringify(extra ? { ...body, [extra[0]]: extra[1] } : body) };
    }),
);
const anyBody = fc.record({
  route: fc.constantFrom(...seeds.map(([r]) => r)),
  payload: fc.oneof(
    fc.json({ maxDepth: 3 }),
    fc.string({ maxLength: 200 }),
    fc.constantFrom('{', '[]', 'null', '{"__proto__":{}}', '{"constructor":{"prototype":{}}}'),
  ),
});

/**
 * Thousands of fuzzed bodies against every POST route: never a 5xx or a crash, always a `{code, message}`
 * body, and a refused request changes nothing (no command row, no bus message).
 */
describe('relay routes under fuzzed bodies', () => {
  let db: TestDatabase;
  let relay: Relay;
  const counts = async () => {
    const { rows } = await db.pool.query<{ commands: string; messages: string }>(
      'SELECT (SELECT count(*) FROM relay_commands) AS commands, (SELECT count(*) FROM bus_messages) AS messages',
    );
    return rows[0]!;
  };

  beforeAll(async () => {
    db = await createTestDatabase(relayMigrationSets);
    relay = await startTestRelay(db, relayTestConfig());
  });
  afterAll(async () => {
    await relay?.close();
    await db?.drop();
  });

  const check = async ({ route, payload }: { route: string; payload: string }) => {
    const before = await counts();
    const response = await relay.app.inject({
      method: 'POST',
      url: `${PREFIX}${route}`,
      payload,
      headers: { 'content-type': 'application/json' },
    });
    expect(response.statusCode).toBeLessThan(500 + (route === '/get_system_fee' ? 3 : 0)); // 502 = 30206: the fuzz relay has no chain
    const body = response.json() as { code: unknown; message?: unknown };
    expect(typeof body.code).toBe('number');
    if (response.statusCode !== 200) {
      expect(body.code).toBeGreaterThanOrEqual(30200);
      expect(typeof body.message).toBe('string');
      expect(await counts()).toEqual(before);
    } else {
      expect(body.code).toBe(200);
    }
  };

  it('mutated valid bodies', async () => {
    await fc.assert(fc.asyncProperty(mutatedBody, check), { numRuns: 2_500 });
  }, 120_000);

  it('arbitrary JSON and non-JSON payloads', async () => {
    await fc.assert(fc.asyncProperty(anyBody, check), { numRuns: 1_000 });
  }, 120_000);
});
