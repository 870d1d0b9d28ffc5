import Fastify, { type FastifyInstance } from 'fastify';
import { Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { createLogger } from '../../shared/logging/logger.js';
import { complaintCommands } from '../../topics/complaint.commands.js';
import { topicSpec } from '../../topics/envelope.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { parseComplaintBody } from './complaint-body.js';
import { agentMigrationSets } from './migrations.js';
import { registerAgentRoutes, type AgentChain } from './routes.js';
import { ComplaintStore } from './store.js';
import { callDataOf } from './submitter.js';
import { sampleComplaint, sdkBody } from './test-harness.js';

const CONTRACT = '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0';
const CHAIN = { chainId: 97, reputation: CONTRACT };
const signer = new Wallet(Wallet.createRandom().privateKey);
const withV = (sig: string, v: number) => sig.slice(0, 130) + v.toString(16).padStart(2, '0');

/**
 * Intake cases the devnet tests cannot show: our devnet Reputation contract takes v 0/1 (it adds 27), the real
 * one (OpenZeppelin's ECDSA.recover) refuses them; a string the jsonb store cannot hold; a complaint that
 * fails between the route's read and the store's lock. Routes, store and bus are real; the chain is a
 * stand-in that says every signer owns the DID.
 */
describe('Agent complaint intake', () => {
  let db: TestDatabase;
  let bus: PostgresBus;
  let store: ComplaintStore;
  let app: FastifyInstance;
  let didChecks = 0;
  const log = createLogger({ level: 'silent' });
  const chain: AgentChain = {
    chainId: 97,
    did: {
      source: 'contract',
      check: async () => {
        didChecks += 1;
        return { owns: true };
      },
      firstOwner: async (_domain, candidates) => {
        for (const candidate of candidates) return candidate;
        return null;
      },
    },
    hasComplaint: async () => false,
  };
  const post = async (body: unknown) => {
    const r = await app.inject({ method: 'POST', url: '/submit-complaint', payload: body as object });
    return { status: r.statusCode, body: r.json() as Record<string, any> };
  };

  beforeAll(async () => {
    db = await createTestDatabase(agentMigrationSets);
    bus = new PostgresBus({
      pool: db.pool,
      connectionString: db.url,
      log,
      idlePollMs: 200,
      rebalanceMs: 200,
    });
    await bus.ensureTopics([topicSpec(complaintCommands, 4)]);
    store = new ComplaintStore(db.pool, bus, 'agent');
    app = Fastify();
    await registerAgentRoutes(app, {
      contractAddr: CONTRACT,
      store,
      chain: () => chain,
      swapChains: new Map(),
      rateLimit: { max: 100_000, windowMs: 60_000 },
      domainRateLimit: { max: 100_000, windowMs: 60_000 },
      bodyLimit: 32_768,
      maxPaidFailures: 2,
      access: { apiKeys: [], allowIps: [] },
      status: () => ({}),
      scrub: (t) => t,
      log,
    });
    await app.ready();
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await bus?.close();
    await db?.drop();
  });

  // The real SDK fills srcAddress / dstAddress with toHexAddress(address): the EVM address itself, or 0x and the
  // 32 bytes of a Solana address, and ethers signs them as uint256. Every such complaint was refused (41002).
  it.each([
    ['an EVM user', '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'],
    ['a Solana user (32 bytes)', '0x' + 'ab'.repeat(32)],
  ])(
    "takes the SDK's 0x-hex addresses (%s): signer recovered, bid as with decimal strings",
    async (_, dst) => {
      const complaint = sampleComplaint({ dstAddress: dst });
      const body = await sdkBody(signer, complaint, 'alice.devnet', CHAIN);
      const parsed = parseComplaintBody(body, { chainId: 97, contractAddr: CONTRACT });
      expect(parsed.signer).toBe(signer.address);
      expect(parsed.stored.dstAddress).toBe(BigInt(dst).toString());
      const decimal = parseComplaintBody(
        {
          params: [
            {
              ...complaint,
              srcAddress: BigInt(complaint.srcAddress).toString(),
              dstAddress: BigInt(dst).toString(),
            },
            body.params[1],
            body.params[2],
          ],
        },
        { chainId: 97, contractAddr: CONTRACT },
      );
      expect(decimal.signer).toBe(signer.address);
      expect(decimal.bidId).toBe(parsed.bidId);
      const answer = await post(body);
      expect(answer.body.code, JSON.stringify(answer.body)).toBe(0);
    },
  );

  // F1: the real Reputation (SignatureHelper.recoverSigner -> OZ ECDSA.recover(digest, v, r, s)) reverts for
  // v = 0/1; the Agent accepts them and sends the signature unchanged.
  it('a v 0/1 signature is made 27/28 at intake: the real contract refuses 0/1', async () => {
    const body = await sdkBody(signer, sampleComplaint(), 'alice.devnet', CHAIN);
    const v = parseInt(body.params[1].slice(130), 16);
    const parsed = parseComplaintBody(
      { params: [body.params[0], withV(body.params[1], v - 27), body.params[2]] },
      { chainId: 97, contractAddr: CONTRACT },
    );
    expect(['1b', '1c']).toContain(parsed.signature.slice(130));
  });

  it('a v 0/1 signature stored before is sent as 27/28: its re-open can succeed', async () => {
    const body = await sdkBody(signer, sampleComplaint({ dstAmount: '7' }), 'alice.devnet', CHAIN);
    const good = body.params[1].toLowerCase();
    const v = parseInt(good.slice(130), 16);
    const first = await post(body);
    expect(first.body.code).toBe(0);
    // As a version before this fix stored it (v 0/1), and the real contract failed it at estimate.
    await db.pool.query(
      `UPDATE agent_complaints SET status = 'failed', reason = 'ECDSAInvalidSignature()', signature = $2
        WHERE bid_id = $1`,
      [first.body.bid_id, withV(good, v - 27)],
    );
    const again = await post(body);
    expect(again.body).toMatchObject({ code: 0, message: 'complaint accepted again (it had failed)' });
    const row = (await store.get(first.body.bid_id))!;
    expect(callDataOf(row)).toContain(good.slice(2));
  });

  // F2: U+0000 in a string member (a valid EIP-712 string, signed) cannot be stored in jsonb.
  it('a signed complaint with U+0000 in a string member is a 400 naming it, not a 503 "retry"', async () => {
    const body = await sdkBody(signer, sampleComplaint({ lpId: 'lp\u0000x' }), 'alice.devnet', CHAIN);
    const answer = await post(body);
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe(41002);
    expect(answer.body.message).toMatch(/complaint\.lpId must not hold U\+0000/);
  });

  // F3: the route skips every check for a known complaint that is not failed, then store.accept re-opens it
  // if it failed in between: no DID check, no hasComplaint, no domain rate limit.
  it("a complaint that fails between the route's read and the store's lock is not re-opened unchecked", async () => {
    const body = await sdkBody(signer, sampleComplaint({ dstAmount: '8' }), 'alice.devnet', CHAIN);
    const first = await post(body);
    expect(first.body.code).toBe(0);
    await db.pool.query(`UPDATE agent_complaints SET status = 'sent' WHERE bid_id = $1`, [first.body.bid_id]);
    const accept = store.accept.bind(store);
    // The sender finishes the job as failed right after the route read the row as 'sent'.
    store.accept = async (c, o) => {
      await db.pool.query(`UPDATE agent_complaints SET status = 'failed' WHERE bid_id = $1`, [c.bidId]);
      return accept(c, o);
    };
    const checksBefore = didChecks;
    try {
      // Not checked (it was under way when read): its status is answered, nothing is re-opened.
      const again = await post(body);
      expect(again.body.message).not.toBe('complaint accepted again (it had failed)');
      expect((await store.get(first.body.bid_id))!.status).toBe('failed');
      expect(didChecks).toBe(checksBefore);
    } finally {
      store.accept = accept;
    }
    // The next post reads it failed: checked again (DID owner, hasComplaint), then re-opened.
    const later = await post(body);
    expect(later.body.message).toBe('complaint accepted again (it had failed)');
    expect(didChecks).toBeGreaterThan(checksBefore);
  });
});
