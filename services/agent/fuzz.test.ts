import fc from 'fast-check';
import { Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDids } from '../../shared/devnet/agreements.js';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { agentMigrationSets } from './migrations.js';
import { AGENT_DEV_KEY, agentTestConfig, sampleComplaint, sdkBody, startTestAgent } from './test-harness.js';

type Agent = Awaited<ReturnType<typeof startTestAgent>>;

const nasty = fc.oneof(
  fc.anything({ maxDepth: 2 }),
  fc.constantFrom(
    '',
    '0x',
    '-1',
    '1e3',
    '1.5',
    ' 1',
    '18446744073709551616',
    '9'.repeat(120),
    '0x' + 'f'.repeat(130),
    '0x' + 'g'.repeat(130),
    '__proto__',
    'constructor',
    '\u0000',
    '\ud800',
  ),
  fc.double(),
  fc.bigInt({ min: -(1n << 300n), max: 1n << 300n }).map(String),
  fc.integer(),
  fc.string({ unit: 'binary', maxLength: 50 }),
);

/**
 * Fuzzed bodies of POST /submit-complaint around a genuine SDK body on the devnet: never a 5xx, always
 * `{code, message}`, and a refusal changes nothing (no row, no bus message, no transaction of the Agent).
 */
describe('POST /submit-complaint under fuzzed bodies', () => {
  let devnet: Devnet;
  let chain: DevnetChain;
  let db: TestDatabase;
  let agent: Agent;
  let seed: { params: unknown[] };
  const agentAddress = new Wallet(AGENT_DEV_KEY).address;

  const counts = async () => {
    const { rows } = await db.pool.query<{ complaints: string; messages: string }>(
      'SELECT (SELECT count(*) FROM agent_complaints) AS complaints, (SELECT count(*) FROM bus_messages) AS messages',
    );
    return { ...rows[0]!, nonce: await chain.provider.getTransactionCount(agentAddress, 'pending') };
  };

  beforeAll(async () => {
    [devnet, db] = await Promise.all([
      startDevnet({ chains: [{ chainId: 97 }] }),
      createTestDatabase(agentMigrationSets),
    ]);
    chain = devnet.chain(97);
    const complainant = new Wallet(chain.accounts[5]!.privateKey);
    await registerDids(chain, { 'fuzz-5.devnet': complainant.address });
    agent = await startTestAgent(
      db,
      agentTestConfig({ rpc: chain.rpcUrl, contractAddr: chain.contracts.reputation }),
    );
    seed = await sdkBody(complainant, sampleComplaint(), 'fuzz-5.devnet', {
      chainId: chain.chainId,
      reputation: chain.contracts.reputation,
    });
  }, 120_000);
  afterAll(async () => {
    await agent?.close();
    await devnet?.stop();
    await db?.drop();
  });

  const check = async (payload: string) => {
    // An accepted mutation (an extra member is ignored: the same complaint) is sent in the background:
    // counted only once it settled, so a refusal's "nothing changed" is exact.
    await waitFor(async () => {
      const { rows } = await db.pool.query(
        `SELECT 1 FROM agent_complaints WHERE status NOT IN ('confirmed', 'failed')`,
      );
      return rows.length === 0;
    }, 'accepted complaints settled');
    const before = await counts();
    const response = await agent.app.inject({
      method: 'POST',
      url: '/submit-complaint',
      payload,
      headers: { 'content-type': 'application/json' },
    });
    expect(response.statusCode).toBeLessThan(500);
    const body = response.json() as { code: unknown; message?: unknown };
    expect(typeof body.code).toBe('number');
    expect(typeof body.message).toBe('string');
    if (response.statusCode === 200) {
      expect(body.code).toBe(0);
    } else {
      expect(body.code).toBeGreaterThanOrEqual(41000);
      expect(await counts()).toEqual(before);
    }
  };

  const MEMBERS = Object.keys(sampleComplaint());
  const mutated = fc
    .tuple(
      fc.constantFrom<'member' | 'delete-member' | 'param' | 'params' | 'extra-member'>(
        'member',
        'member',
        'delete-member',
        'param',
        'params',
        'extra-member',
      ),
      fc.constantFrom(...MEMBERS),
      fc.nat({ max: 3 }),
      nasty,
    )
    .map(([mode, member, index, value]) => {
      const [complaint, signature, domain] = seed.params as [Record<string, unknown>, string, string];
      const c = { ...complaint };
      const params: unknown[] = [c, signature, domain];
      if (mode === 'member') c[member] = value;
      else if (mode === 'delete-member') delete c[member];
      else if (mode === 'extra-member') c[`x${member}`] = value;
      else if (mode === 'param') params[index] = value;
      else return JSON.stringify({ params: value });
      return JSON.stringify({ params });
    });
  const anyBody = fc.oneof(
    fc.json({ maxDepth: 3 }),
    fc.string({ maxLength: 200 }),
    fc.constantFrom('{', '[]', 'null', '{"params":null}', '{"__proto__":{}}', '{"params":[{},{},{}]}'),
  );

  it('mutated genuine bodies', async () => {
    await fc.assert(fc.asyncProperty(mutated, check), { numRuns: 1_000 });
  }, 180_000);

  it('arbitrary JSON and non-JSON payloads', async () => {
    await fc.assert(fc.asyncProperty(anyBody, check), { numRuns: 600 });
  }, 120_000);
});
