import { Contract, Wallet } from 'ethers';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { registerDids, signAgreement } from '../../shared/devnet/agreements.js';
import type { Agreement } from '../../shared/otmoic/agreement.js';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { reputationInterface } from '../../shared/otmoic/abi.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { COMPLAINT_MEMBER_MAX_LENGTH } from './complaint-body.js';
import { AGENT_ERRORS } from './errors.js';
import { agentMigrationSets } from './migrations.js';
import {
  AGENT_DEV_KEY,
  agentTestConfig,
  hasComplaintOnChain,
  sampleComplaint,
  sdkBody,
  sdkComplaintOf,
  startTestAgent,
  submitComplaintLogs,
  type SdkComplaint,
} from './test-harness.js';

type Agent = Awaited<ReturnType<typeof startTestAgent>>;

/**
 * The Agent on the devnet with bodies made exactly as the SDK makes them (ethers signTypedData over the
 * Complaint under the "Otmoic Reputation" domain, the `params` array): each accepted complaint is on chain
 * once; every refusal stores and sends nothing.
 */
describe('Agent complaint intake and submission on the devnet', () => {
  let devnet: Devnet;
  let chain: DevnetChain;
  let db: TestDatabase;
  let agent: Agent;
  const agentAddress = new Wallet(AGENT_DEV_KEY).address;
  const DOMAIN = 'complainant-5.devnet';
  let complainant: Wallet;
  let stranger: Wallet;

  const body = (complaint: SdkComplaint, signer: Wallet = complainant, domain = DOMAIN) =>
    sdkBody(signer, complaint, domain, { chainId: chain.chainId, reputation: chain.contracts.reputation });
  const counts = async () => {
    const { rows } = await db.pool.query<{ complaints: string; messages: string }>(
      'SELECT (SELECT count(*) FROM agent_complaints) AS complaints, (SELECT count(*) FROM bus_messages) AS messages',
    );
    return {
      ...rows[0]!,
      agentTxs: await chain.provider.getTransactionCount(agentAddress, 'latest'),
      logs: (await submitComplaintLogs(chain)).length,
    };
  };
  const statusOf = async (bid: string) => (await agent.get(`/complaint-status?bid=${bid}`)).body;
  const settled = async (bid: string) => {
    await waitFor(
      async () => ['confirmed', 'failed'].includes((await statusOf(bid)).status),
      `complaint ${bid} settled`,
      20_000,
    );
    return statusOf(bid);
  };
  const config = () =>
    agentTestConfig({
      rpc: chain.rpcUrl,
      contractAddr: chain.contracts.reputation,
      chainId: undefined, // read from the RPC at start
      domainRateLimit: { max: 1_000, windowMs: 60_000 },
    });
  /**
   * Restarts the Agent while the test holds its wallet's sender lock: complaints are accepted and scheduled,
   * the submitter stands by until `release` (then its next pass takes the lock and sends).
   */
  const holdSender = async () => {
    await agent.close();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [
      `otmoic:sender-wallet:${chain.chainId}:${agentAddress}`,
    ]);
    agent = await startTestAgent(db, config());
    return async () => {
      await client.query('SELECT pg_advisory_unlock_all()');
      await client.end();
    };
  };

  beforeAll(async () => {
    [devnet, db] = await Promise.all([
      startDevnet({ chains: [{ chainId: 97 }] }),
      createTestDatabase(agentMigrationSets),
    ]);
    chain = devnet.chain(97);
    complainant = new Wallet(chain.accounts[5]!.privateKey);
    stranger = new Wallet(chain.accounts[6]!.privateKey);
    await registerDids(chain, { [DOMAIN]: complainant.address, 'stranger-6.devnet': stranger.address });
    agent = await startTestAgent(db, config());
  }, 120_000);
  afterAll(async () => {
    await agent?.close();
    await devnet?.stop();
    await db?.drop();
  });
  beforeEach(async () => {
    await chain.provider.send('evm_setAutomine', [true]);
  });

  it('accepts the SDK body and puts the complaint on chain once, from the Agent wallet', async () => {
    const before = await counts();
    const complaint = sampleComplaint();
    const answer = await agent.post('/submit-complaint', await body(complaint));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      code: 0,
      message: 'complaint accepted',
      status: 'accepted',
      domain: DOMAIN,
      complainant: complainant.address,
    });
    const bid = answer.body.bid_id as string;
    const done = await settled(bid);
    expect(done).toMatchObject({ code: 0, status: 'confirmed', already_on_chain: false, reason: null });
    expect(await hasComplaintOnChain(chain, bid)).toBe(true);
    const logs = (await submitComplaintLogs(chain)).filter((l) => l.bidId === bid);
    expect(logs).toHaveLength(1);
    expect(done.tx_hash).toBe(logs[0]!.txHash);
    const receipt = (await chain.provider.getTransactionReceipt(done.tx_hash))!;
    expect(receipt.from).toBe(agentAddress);
    expect(done.block_number).toBe(receipt.blockNumber);
    // The contract's own bid id is the one the Agent computed (spec/otmoic.md §5).
    const reputation = new Contract(chain.contracts.reputation, reputationInterface, chain.provider);
    const parsed = reputationInterface.parseLog(receipt.logs[0]!)!;
    expect((parsed.args[0] as string).toLowerCase()).toBe(bid);
    expect(await reputation.getFunction('hasComplaint')(bid)).toBe(true);
    const after = await counts();
    expect(after).toEqual({
      complaints: String(Number(before.complaints) + 1),
      messages: String(Number(before.messages) + 1),
      agentTxs: before.agentTxs + 1,
      logs: before.logs + 1,
    });
    const metrics = await agent.metrics.metrics();
    expect(metrics).toMatch(/agent_complaints_total\{outcome="accepted"\} 1/);
    expect(metrics).toMatch(/agent_complaints_total\{outcome="confirmed"\} 1/);
    expect(metrics).toMatch(/agent_submissions\{status="confirmed"\} 1/);
    expect(metrics).toMatch(/agent_wallet_balance_wei \d/);
    expect(metrics).toMatch(/^agent_oldest_waiting_seconds\{status="accepted"\} 0$/m);
    expect(metrics).toMatch(/^agent_oldest_waiting_seconds\{status="scheduled"\} 0$/m);
  }, 60_000);

  it('the same body N times, concurrently and after it is on chain: one row, one message, one transaction', async () => {
    const before = await counts();
    const sdk = await body(sampleComplaint());
    const answers = await Promise.all(Array.from({ length: 6 }, () => agent.post('/submit-complaint', sdk)));
    const bids = new Set(answers.map((a) => a.body.bid_id));
    expect(bids.size).toBe(1);
    for (const a of answers) expect(a.body.code).toBe(0);
    expect(answers.filter((a) => a.body.message === 'complaint accepted')).toHaveLength(1);
    const bid = [...bids][0] as string;
    await settled(bid);
    const again = await agent.post('/submit-complaint', sdk);
    expect(again.body).toMatchObject({ code: 0, message: 'complaint already accepted', status: 'confirmed' });
    const after = await counts();
    expect(after.complaints).toBe(String(Number(before.complaints) + 1));
    expect(after.messages).toBe(String(Number(before.messages) + 1));
    expect(after.agentTxs).toBe(before.agentTxs + 1);
    expect((await submitComplaintLogs(chain)).filter((l) => l.bidId === bid)).toHaveLength(1);
  }, 60_000);

  it('takes either party: the user (its address in any case), the LP under its id (as it is or as the SDK writes a@b), or the key owning the LP id under another domain', async () => {
    await registerDids(chain, { 'lp-of-6.devnet': stranger.address, 'lp.at.devnet': stranger.address });
    const accepted = async (complaint: SdkComplaint, signer: Wallet, domain: string) => {
      const answer = await agent.post('/submit-complaint', await body(complaint, signer, domain));
      expect(answer.body).toMatchObject({ code: 0, message: 'complaint accepted', domain });
      return answer.body.bid_id as string;
    };
    const bids = [
      await accepted(sampleComplaint({ requestor: complainant.address.toLowerCase() }), complainant, DOMAIN),
      await accepted(sampleComplaint({ lpId: 'stranger-6.devnet' }), stranger, 'stranger-6.devnet'),
      await accepted(sampleComplaint({ lpId: 'lp@at.devnet' }), stranger, 'lp.at.devnet'),
      await accepted(sampleComplaint({ lpId: 'lp-of-6.devnet' }), stranger, 'stranger-6.devnet'),
    ];
    for (const bid of bids) expect(await settled(bid)).toMatchObject({ status: 'confirmed' });
  }, 60_000);

  describe('refusals store and send nothing', () => {
    const refuse = async (
      payload: unknown,
      expected: keyof typeof AGENT_ERRORS,
      message: RegExp,
    ): Promise<void> => {
      const before = await counts();
      const answer = await agent.post('/submit-complaint', payload);
      expect(answer.status).toBe(AGENT_ERRORS[expected].status);
      expect(answer.body.code).toBe(AGENT_ERRORS[expected].code);
      expect(answer.body.message).toMatch(message);
      // Give a wrongly accepted complaint the time to be sent before counting.
      await new Promise((r) => setTimeout(r, 300));
      expect(await counts()).toEqual(before);
    };

    it('a signature by a key that does not own the domain', async () => {
      const complaint = sampleComplaint();
      const signedByStranger = await body(complaint, stranger, DOMAIN);
      await refuse(
        signedByStranger,
        'NOT_DOMAIN_OWNER',
        new RegExp(`recovers ${stranger.address}.*owned by ${complainant.address}`),
      );
    });

    it('a complaint altered after signing (the signature recovers someone else)', async () => {
      const sdk = await body(sampleComplaint());
      const altered = { params: [{ ...sdk.params[0], dstAmount: '1' }, sdk.params[1], sdk.params[2]] };
      await refuse(altered, 'NOT_DOMAIN_OWNER', /does not own the DID domain/);
    });

    it('a malformed signature', async () => {
      const sdk = await body(sampleComplaint());
      await refuse(
        { params: [sdk.params[0], sdk.params[1].slice(0, 130), DOMAIN] },
        'INVALID_SIGNATURE',
        /65 bytes/,
      );
      const badV = `${sdk.params[1].slice(0, 130)}1d`;
      await refuse({ params: [sdk.params[0], badV, DOMAIN] }, 'INVALID_SIGNATURE', /v must be/);
    });

    it("a complaint from neither party: not the requestor's, not the LP id, not by the LP id's owner", async () => {
      // A stranger's own DID, and the user's DID on a swap of another user: valid signatures of domain owners,
      // which the contract would take and the Classifier would judge invalid (case 0).
      await refuse(
        await body(sampleComplaint(), stranger, 'stranger-6.devnet'),
        'NOT_A_PARTY',
        new RegExp(`neither the swap's user nor its LP: the signer ${stranger.address} is not the requestor`),
      );
      await registerDids(chain, { 'lp-of-6.devnet': stranger.address });
      await refuse(
        await body(
          sampleComplaint({ requestor: stranger.address, lpId: 'lp-of-6.devnet' }),
          complainant,
          DOMAIN,
        ),
        'NOT_A_PARTY',
        /the domain "complainant-5.devnet" is not the LP id "lp-of-6.devnet", whose DID the signer does not own/,
      );
      expect(await agent.metrics.metrics()).toMatch(
        /agent_complaint_refusals_total\{reason="NOT_A_PARTY"\} [1-9]/,
      );
    });

    it('a signer who owns another domain, and a domain nobody owns', async () => {
      await refuse(await body(sampleComplaint(), stranger, DOMAIN), 'NOT_DOMAIN_OWNER', /owned by/);
      await refuse(
        await body(sampleComplaint(), complainant, 'nobody.devnet'),
        'NOT_DOMAIN_OWNER',
        /not registered/,
      );
    });

    it('malformed members, each named', async () => {
      const sdk = await body(sampleComplaint());
      const c = sdk.params[0] as unknown as Record<string, unknown>;
      await refuse(
        {
          params: [
            { ...c, srcChainId: -1, dstChainId: '18446744073709551616', srcAddress: 5, lpSign: undefined },
            sdk.params[1],
            DOMAIN,
          ],
        },
        'INVALID_COMPLAINT',
        /srcChainId must not be negative.*srcAddress must be 0x-hex or a decimal integer string.*dstChainId must be below 2\^64.*lpSign is required/,
      );
      await refuse(
        { params: [{ ...c, dstAddress: (1n << 256n).toString() }, sdk.params[1], DOMAIN] },
        'INVALID_COMPLAINT',
        /dstAddress must be below 2\^256/,
      );
      await refuse(
        { params: [{ ...c, dstAddress: '0x' + 'f'.repeat(65) }, sdk.params[1], DOMAIN] },
        'INVALID_COMPLAINT',
        /dstAddress must be 0x and at most 64 hex digits, or a decimal integer string/,
      );
      await refuse(
        { params: [{ ...c, userSign: 7 }, sdk.params[1], DOMAIN] },
        'INVALID_COMPLAINT',
        /userSign must be a string/,
      );
      // Each string member bounded: the Agent's wallet pays for every byte (an unbounded one cost 6x the gas).
      await refuse(
        { params: [{ ...c, srcToken: 'x'.repeat(129), lpId: 'l'.repeat(201) }, sdk.params[1], DOMAIN] },
        'INVALID_COMPLAINT',
        /srcToken must be at most 128 UTF-8 bytes \(got 129\); complaint\.lpId must be at most 200 UTF-8 bytes \(got 201\)/,
      );
      await refuse({ params: [sdk.params[0], sdk.params[1]] }, 'INVALID_BODY', /exactly/);
      await refuse({ params: [sdk.params[0], sdk.params[1], ''] }, 'INVALID_DOMAIN', /DID domain/);
      await refuse('{"params":', 'INVALID_BODY', /not valid JSON/);
    });

    it('a domain with a lone UTF-16 surrogate is a 400, not a 503 "retry"', async () => {
      // Valid JSON ("\\ud800"), but no UTF-8 string: the registry's ownerOfDomain call cannot be encoded.
      await refuse(
        await body(sampleComplaint(), complainant, 'a\ud800.devnet'),
        'INVALID_DOMAIN',
        /DID domain/,
      );
    });

    it('a bid that already has its complaint on chain', async () => {
      const sdk = await body(sampleComplaint());
      // Submitted directly, as anybody may: the contract takes one complaint per bid.
      const reputation = new Contract(chain.contracts.reputation, reputationInterface, chain.wallet(7));
      await (await reputation.getFunction('submitComplaint')(sdk.params[0], sdk.params[1], DOMAIN)).wait();
      await refuse(sdk, 'COMPLAINT_EXISTS', /already has a complaint on chain/);
    });

    it('another complainant for a bid whose complaint was accepted here', async () => {
      const complaint = sampleComplaint();
      const first = await agent.post('/submit-complaint', await body(complaint));
      await settled(first.body.bid_id);
      await refuse(
        await body(complaint, stranger, 'stranger-6.devnet'),
        'COMPLAINT_EXISTS',
        /accepted here from DID/,
      );
    });
  });

  it('a complaint with every string member at its bound is sent, for well under agent.maxGasLimit', async () => {
    const longest = Object.fromEntries(
      Object.entries(COMPLAINT_MEMBER_MAX_LENGTH).map(([member, max]) => [member, 'x'.repeat(max)]),
    );
    // The requestor is no address at its bound, so the complainant is the LP, under its id (the longest).
    const lpId = longest['lpId']!;
    await registerDids(chain, { [lpId]: complainant.address });
    const answer = await agent.post(
      '/submit-complaint',
      await body(sampleComplaint(longest), complainant, lpId),
    );
    expect(answer.body).toMatchObject({ code: 0 });
    const done = await settled(answer.body.bid_id);
    expect(done.status).toBe('confirmed');
    const receipt = (await chain.provider.getTransactionReceipt(done.tx_hash))!;
    // About 6x less than an unbounded member allowed (854,140 gas at a 21 KB body); the default cap is 400,000.
    expect(receipt.gasUsed).toBeLessThan(200_000n);
  }, 60_000);

  it('the bounds hold the gas of multi-byte members too: 4-byte characters at the bounds are refused', async () => {
    // U+1F600 is one character (code point) and 4 UTF-8 bytes: calldata, the event and the hashes pay per byte.
    const wide = (n: number) => '\u{1F600}'.repeat(n);
    const longest = Object.fromEntries(
      Object.entries(COMPLAINT_MEMBER_MAX_LENGTH).map(([member, max]) => [member, wide(max)]),
    );
    const lpId = longest['lpId']!;
    await registerDids(chain, { [lpId]: complainant.address });
    const before = await counts();
    const answer = await agent.post(
      '/submit-complaint',
      await body(sampleComplaint(longest), complainant, lpId),
    );
    if (answer.body.code === 0) {
      const done = await settled(answer.body.bid_id);
      const receipt = done.tx_hash ? await chain.provider.getTransactionReceipt(done.tx_hash) : null;
      expect.fail(
        `accepted, ${done.status}, ${receipt?.gasUsed ?? '?'} gas (the ASCII bound is under 200,000)`,
      );
    }
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: AGENT_ERRORS.INVALID_COMPLAINT.code });
    expect(answer.body.message).toMatch(/complaint\.srcToken must be at most 128 UTF-8 bytes/);
    // The domain likewise: 64 characters, 256 bytes.
    const domain = await agent.post(
      '/submit-complaint',
      await body(sampleComplaint(), complainant, wide(64)),
    );
    expect(domain.body).toMatchObject({ code: AGENT_ERRORS.INVALID_DOMAIN.code });
    expect(await counts()).toEqual(before);
  }, 60_000);

  it('DuplicateBidId at submission (someone else was first) is a success, nothing of ours mined', async () => {
    const release = await holdSender();
    const sdk = await body(sampleComplaint());
    const before = await chain.provider.getTransactionCount(agentAddress, 'latest');
    let bid: string;
    try {
      const answer = await agent.post('/submit-complaint', sdk);
      expect(answer.body.code).toBe(0);
      bid = answer.body.bid_id;
      await waitFor(async () => (await statusOf(bid)).status === 'scheduled', 'scheduled');
      const reputation = new Contract(chain.contracts.reputation, reputationInterface, chain.wallet(7));
      await (await reputation.getFunction('submitComplaint')(sdk.params[0], sdk.params[1], DOMAIN)).wait();
    } finally {
      await release();
    }
    const done = await settled(bid);
    expect(done).toMatchObject({ status: 'confirmed', already_on_chain: true, tx_hash: null });
    expect(done.reason).toMatch(/DuplicateBidId/);
    expect(await chain.provider.getTransactionCount(agentAddress, 'latest')).toBe(before);
    expect((await submitComplaintLogs(chain)).filter((l) => l.bidId === bid)).toHaveLength(1);
  }, 60_000);

  it('any other revert fails the complaint with the decoded reason, nothing sent', async () => {
    const release = await holdSender();
    const complaint = sampleComplaint();
    const domain = 'moving-5.devnet';
    await registerDids(chain, { [domain]: complainant.address });
    const sdk = await body(complaint, complainant, domain);
    const before = await chain.provider.getTransactionCount(agentAddress, 'latest');
    let bid: string;
    try {
      const answer = await agent.post('/submit-complaint', sdk);
      expect(answer.body.code).toBe(0);
      bid = answer.body.bid_id;
      await waitFor(async () => (await statusOf(bid)).status === 'scheduled', 'scheduled');
      // The DID moves to another owner after the Agent checked it.
      await registerDids(chain, { [domain]: stranger.address });
    } finally {
      await release();
    }
    const done = await settled(bid);
    expect(done.status).toBe('failed');
    expect(done.reason).toMatch(
      new RegExp(
        `InvalidSigner: the signature recovers ${complainant.address}, the DID domain is owned by ${stranger.address}`,
      ),
    );
    expect(await chain.provider.getTransactionCount(agentAddress, 'latest')).toBe(before);
    expect(await hasComplaintOnChain(chain, bid)).toBe(false);
    // The same complaint again is refused now (the signer no longer owns the domain) and stays failed.
    const again = await agent.post('/submit-complaint', sdk);
    expect(again.body.code).toBe(AGENT_ERRORS.NOT_DOMAIN_OWNER.code);
    // Once the DID is back, the same complaint is re-opened and goes on chain.
    await registerDids(chain, { [domain]: complainant.address });
    const reopened = await agent.post('/submit-complaint', sdk);
    expect(reopened.body).toMatchObject({
      code: 0,
      status: 'scheduled',
      message: 'complaint accepted again (it had failed)',
    });
    expect((await settled(bid)).status).toBe('confirmed');
    expect(await chain.provider.getTransactionCount(agentAddress, 'latest')).toBe(before + 1);
  }, 60_000);

  it("the same complainant's other complaint with the same bid id: refused while the first is under way, sent in its place once it failed", async () => {
    const domain = 'twin-5.devnet';
    await registerDids(chain, { [domain]: complainant.address });
    const first = sampleComplaint();
    // The bid joins the fields without separators: "T" + "9006" and "T900" + "6" are one bid.
    const other = { ...first, agreementReachedTime: first.agreementReachedTime * 1_000 + 900, srcChainId: 6 };
    const release = await holdSender();
    let bid: string;
    try {
      const accepted = await agent.post('/submit-complaint', await body(first, complainant, domain));
      expect(accepted.body.code).toBe(0);
      bid = accepted.body.bid_id;
      await waitFor(async () => (await statusOf(bid)).status === 'scheduled', 'scheduled');
      const twin = await agent.post('/submit-complaint', await body(other, complainant, domain));
      expect(twin.status).toBe(409);
      expect(twin.body).toMatchObject({ code: AGENT_ERRORS.COMPLAINT_EXISTS.code });
      expect(twin.body.message).toMatch(new RegExp(`bid ${bid} already has another complaint`));
      // The first fails: its DID moves away after the Agent checked it.
      await registerDids(chain, { [domain]: stranger.address });
    } finally {
      await release();
    }
    expect((await settled(bid)).status).toBe('failed');
    await registerDids(chain, { [domain]: complainant.address });
    const sent = await body(other, complainant, domain);
    const replacing = await agent.post('/submit-complaint', sent);
    expect(replacing.body).toMatchObject({
      code: 0,
      bid_id: bid,
      message: 'complaint accepted (it replaces a failed complaint of this bid)',
    });
    expect((await settled(bid)).status).toBe('confirmed');
    // What went on chain is the complaint accepted last, with its own signature.
    const topic = reputationInterface.getEvent('SubmitComplaint')!.topicHash;
    const logs = await chain.provider.getLogs({
      address: chain.contracts.reputation,
      topics: [topic],
      fromBlock: 0,
    });
    const ours = logs
      .map((l) => reputationInterface.parseLog(l)!)
      .filter((p) => String(p.args[0]).toLowerCase() === bid);
    expect(ours).toHaveLength(1);
    const onChain = ours[0]!.args[1];
    expect([Number(onChain.agreementReachedTime), Number(onChain.srcChainId)]).toEqual([
      other.agreementReachedTime,
      6,
    ]);
    const { rows } = await db.pool.query('SELECT signature FROM agent_complaints WHERE bid_id = $1', [bid]);
    expect(rows[0].signature).toBe((sent.params[1] as string).toLowerCase());
  }, 60_000);

  it('a failed complaint from another signer does not lock the bid: the genuine complaint replaces it and goes on chain', async () => {
    // The auditor's case: one party (here the LP, under its id) signs the swap's complaint and gives the DID
    // away once the Agent accepted it: the estimate reverts InvalidSigner. (A stranger is refused at once:
    // "a complaint from neither party".)
    const squatterDomain = 'squatter-6.devnet';
    await registerDids(chain, { [squatterDomain]: stranger.address });
    const complaint = sampleComplaint({ lpId: squatterDomain });
    const squatted = await body(complaint, stranger, squatterDomain);
    const genuine = await body(complaint);
    const before = await counts();
    const release = await holdSender();
    let bid: string;
    try {
      const first = await agent.post('/submit-complaint', squatted);
      expect(first.body).toMatchObject({ code: 0, message: 'complaint accepted', domain: squatterDomain });
      bid = first.body.bid_id;
      await waitFor(async () => (await statusOf(bid)).status === 'scheduled', 'scheduled');
      // While the squatter's complaint is under way, the bid is taken (unchanged behaviour).
      const early = await agent.post('/submit-complaint', genuine);
      expect(early).toMatchObject({ status: 409, body: { code: AGENT_ERRORS.COMPLAINT_EXISTS.code } });
      await registerDids(chain, { [squatterDomain]: chain.accounts[8]!.address });
    } finally {
      await release();
    }
    const failed = await settled(bid);
    expect(failed.status).toBe('failed');
    expect(failed.reason).toMatch(/InvalidSigner/);
    expect(await hasComplaintOnChain(chain, bid)).toBe(false);

    const answer = await agent.post('/submit-complaint', genuine);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      code: 0,
      message: 'complaint accepted (it replaces a failed complaint of this bid)',
      bid_id: bid,
      domain: DOMAIN,
      complainant: complainant.address,
      tx_hash: null,
      transactions: [],
    });
    expect(['accepted', 'scheduled']).toContain(answer.body.status);
    const done = await settled(bid);
    expect(done).toMatchObject({
      status: 'confirmed',
      already_on_chain: false,
      complainant: complainant.address,
    });
    const logs = (await submitComplaintLogs(chain)).filter((l) => l.bidId === bid);
    expect(logs).toHaveLength(1);
    expect(logs[0]!.txHash).toBe(done.tx_hash);
    expect((await chain.provider.getTransactionReceipt(done.tx_hash))!.from).toBe(agentAddress);
    // One row; a complaint.commands message for each accepted complaint; one transaction (the squatter's
    // was refused at estimate).
    expect(await counts()).toEqual({
      complaints: String(Number(before.complaints) + 1),
      messages: String(Number(before.messages) + 2),
      agentTxs: before.agentTxs + 1,
      logs: before.logs + 1,
    });
    // The replaced complaint is kept for audit.
    const { rows } = await db.pool.query<{ history: Record<string, unknown>[] }>(
      'SELECT history FROM agent_complaints WHERE bid_id = $1',
      [bid],
    );
    expect(rows[0]!.history).toEqual([
      expect.objectContaining({
        signer: stranger.address,
        domain: squatterDomain,
        reason: expect.stringMatching(/InvalidSigner/),
        transactions: [],
      }),
    ]);
    expect(await agent.metrics.metrics()).toMatch(/agent_complaints_total\{outcome="replaced"\} 1/);
    // The squatter (or anyone else) cannot take it back now, and the genuine repeat answers its status.
    await registerDids(chain, { [squatterDomain]: stranger.address });
    const back = await agent.post('/submit-complaint', squatted);
    expect(back).toMatchObject({ status: 409, body: { code: AGENT_ERRORS.COMPLAINT_EXISTS.code } });
    expect((await agent.post('/submit-complaint', genuine)).body).toMatchObject({
      code: 0,
      message: 'complaint already accepted',
      status: 'confirmed',
    });
  }, 60_000);

  it('a DID moved ahead of the Agent in its block costs the wallet at most maxPaidFailures transactions per domain', async () => {
    // The gas drain: the complainant's call estimated fine, then the DID's owner moves it away in the same
    // block, ahead of the Agent's transaction (a higher tip), so it reverts InvalidSigner and the Agent paid.
    // Each re-post was re-opened and paid for again, without limit.
    const domain = 'flipping-5.devnet';
    await registerDids(chain, { [domain]: complainant.address });
    const registry = new Contract(
      chain.contracts.reputation,
      ['function setDomainOwner(string domain, address owner)'],
      chain.wallet(0),
    );
    const moveAheadAndMine = async () => {
      await registry.getFunction('setDomainOwner')(domain, stranger.address, {
        maxPriorityFeePerGas: 300_000_000_000n,
        maxFeePerGas: 400_000_000_000n,
      });
      await chain.provider.send('evm_mine', []);
    };
    // The user complains under its DID; the LP (stranger-6.devnet) complains last.
    const complaint = sampleComplaint({ lpId: 'stranger-6.devnet' });
    const sdk = await body(complaint, complainant, domain);
    const before = await chain.provider.getTransactionCount(agentAddress, 'latest');
    let bid = '';
    for (let round = 1; round <= 2; round++) {
      await chain.provider.send('evm_setAutomine', [false]);
      const answer = await agent.post('/submit-complaint', sdk);
      expect(answer.body).toMatchObject({ code: 0, paid_failures: round - 1 });
      bid = answer.body.bid_id;
      await waitFor(async () => (await statusOf(bid)).status === 'sent', 'complaint sent', 20_000);
      await moveAheadAndMine();
      const failed = await settled(bid);
      expect(failed).toMatchObject({ status: 'failed', paid_failures: round });
      expect(failed.reason).toMatch(/InvalidSigner/);
      expect(failed.block_number).toBeGreaterThan(0);
      await chain.provider.send('evm_setAutomine', [true]);
      await registerDids(chain, { [domain]: complainant.address });
    }
    expect(await chain.provider.getTransactionCount(agentAddress, 'latest')).toBe(before + 2);
    // Two paid failures: the same complaint, though its signer owns the DID again, is refused and changes
    // nothing.
    const again = await agent.post('/submit-complaint', sdk);
    expect([again.status, again.body.code]).toEqual([409, AGENT_ERRORS.COMPLAINT_FAILED_ON_CHAIN.code]);
    expect(again.body.message).toContain(
      `bid ${bid}: 2 complaint transactions of DID "${domain}" were mined and failed`,
    );
    // Handing the DID to a fresh address does not start a new count: the count is the domain's.
    const fresh = new Wallet(Wallet.createRandom().privateKey);
    await registerDids(chain, { [domain]: fresh.address });
    const handedOver = await agent.post('/submit-complaint', await body(complaint, fresh, domain));
    expect([handedOver.status, handedOver.body.code]).toEqual([
      409,
      AGENT_ERRORS.COMPLAINT_FAILED_ON_CHAIN.code,
    ]);
    expect(await statusOf(bid)).toMatchObject({ status: 'failed', paid_failures: 2, domain });
    // Two failures, one after a re-open: both counted (agent_job_failures, the notifier's alert ids).
    const { rows: counted } = await db.pool.query<{ failures: number }>(
      'SELECT failures FROM agent_complaints WHERE bid_id = $1',
      [bid],
    );
    expect(counted).toEqual([{ failures: 2 }]);
    const gauge = /^agent_job_failures (\d+)$/m.exec(await agent.metrics.metrics());
    expect(Number(gauge?.[1])).toBeGreaterThanOrEqual(2);
    expect(await chain.provider.getTransactionCount(agentAddress, 'latest')).toBe(before + 2);
    expect(await agent.metrics.metrics()).toMatch(
      /agent_complaint_refusals_total\{reason="COMPLAINT_FAILED_ON_CHAIN"\} 2/,
    );
    // The other party's domain is not charged with those failures: its complaint replaces the failed one and
    // goes on chain.
    const other = await agent.post('/submit-complaint', await body(complaint, stranger, 'stranger-6.devnet'));
    expect(other.body).toMatchObject({ code: 0, paid_failures: 0, domain: 'stranger-6.devnet' });
    expect(await settled(bid)).toMatchObject({ status: 'confirmed', paid_failures: 0 });
    expect(await chain.provider.getTransactionCount(agentAddress, 'latest')).toBe(before + 3);
    const { rows } = await db.pool.query<{ history: Record<string, unknown>[] }>(
      'SELECT history FROM agent_complaints WHERE bid_id = $1',
      [bid],
    );
    expect(rows[0]!.history).toEqual([expect.objectContaining({ domain, paid_failures: 2 })]);
  }, 90_000);

  describe('access to POST /submit-complaint (agent.apiKeys, agent.allowIps)', () => {
    const KEY = 'agent-api-key-0123456789abcdef';
    const startWith = async (overrides: Parameters<typeof agentTestConfig>[0]) => {
      const lines: string[] = [];
      const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
      const restricted = await startTestAgent(
        db,
        agentTestConfig({ rpc: chain.rpcUrl, contractAddr: chain.contracts.reputation, ...overrides }),
        log,
      );
      return { restricted, lines };
    };
    const openWarning = /POST \/submit-complaint is open to every client/;

    it('refuses a missing or wrong API key with 401/41017 and changes nothing; the right key is accepted', async () => {
      const { restricted, lines } = await startWith({ apiKeys: [KEY] });
      try {
        const sdk = await body(sampleComplaint());
        const before = await counts();
        const wrong: Record<string, string>[] = [
          {},
          { 'x-api-key': `${KEY}x` },
          { 'x-api-key': KEY.toUpperCase() },
        ];
        for (const headers of wrong) {
          expect(await restricted.post('/submit-complaint', sdk, headers)).toEqual({
            status: 401,
            body: {
              code: AGENT_ERRORS.UNAUTHORIZED.code,
              message: 'a valid API key is required in the x-api-key header',
            },
          });
        }
        // Refused before the body is read: junk gets the same answer.
        expect((await restricted.post('/submit-complaint', '{"params":')).body.code).toBe(
          AGENT_ERRORS.UNAUTHORIZED.code,
        );
        await new Promise((r) => setTimeout(r, 300));
        expect(await counts()).toEqual(before);
        // Reads stay open.
        expect((await restricted.get('/status')).status).toBe(200);
        const accepted = await restricted.post('/submit-complaint', sdk, { 'x-api-key': KEY });
        expect(accepted.body).toMatchObject({ code: 0, message: 'complaint accepted' });
        expect((await settled(accepted.body.bid_id)).status).toBe('confirmed');
        expect(await restricted.metrics.metrics()).toMatch(
          /agent_complaint_refusals_total\{reason="UNAUTHORIZED"\} 4/,
        );
        const output = lines.join('');
        expect(output).not.toMatch(openWarning);
        expect(output).not.toContain(KEY);
        expect(output.toLowerCase()).not.toContain(KEY.toLowerCase());
      } finally {
        await restricted.close();
      }
    }, 60_000);

    it('refuses a client IP outside agent.allowIps with 403/41018 and changes nothing; an allowed IP is accepted', async () => {
      const outside = await startWith({ allowIps: ['10.0.0.0/8', '192.168.1.7', 'fd00::/8'] });
      try {
        const sdk = await body(sampleComplaint());
        const before = await counts();
        expect(await outside.restricted.post('/submit-complaint', sdk)).toEqual({
          status: 403,
          body: { code: AGENT_ERRORS.FORBIDDEN.code, message: 'this client IP may not use this route' },
        });
        await new Promise((r) => setTimeout(r, 300));
        expect(await counts()).toEqual(before);
        expect(outside.lines.join('')).not.toMatch(openWarning);
      } finally {
        await outside.restricted.close();
      }
      const inside = await startWith({ allowIps: ['127.0.0.0/8'] });
      try {
        const answer = await inside.restricted.post('/submit-complaint', await body(sampleComplaint()));
        expect(answer.body).toMatchObject({ code: 0, message: 'complaint accepted' });
        expect((await settled(answer.body.bid_id)).status).toBe('confirmed');
      } finally {
        await inside.restricted.close();
      }
    }, 60_000);

    it('warns once at start-up when the route is open to everyone', async () => {
      const { restricted, lines } = await startWith({});
      try {
        expect(lines.filter((l) => openWarning.test(l))).toHaveLength(1);
        expect(JSON.parse(lines.find((l) => openWarning.test(l))!)).toMatchObject({ level: 40 });
        await restricted.post('/submit-complaint', await body(sampleComplaint()));
        expect(lines.filter((l) => openWarning.test(l))).toHaveLength(1);
      } finally {
        await restricted.close();
      }
    }, 60_000);
  });

  it('status, 404, rate limits and body limit answer {code, message} with their status', async () => {
    expect((await agent.get(`/complaint-status?bid=0x${'ab'.repeat(32)}`)).body).toMatchObject({
      code: 41010,
    });
    expect((await agent.get(`/complaint-status?bid=0x${'ab'.repeat(32)}`)).status).toBe(404);
    expect((await agent.get('/complaint-status?bid=12')).status).toBe(400);
    const missing = await agent.get('/nope');
    expect(missing).toMatchObject({ status: 404, body: { code: 41011 } });
    const large = await agent.post('/submit-complaint', { params: ['x'.repeat(40_000), '0x', 'd'] });
    expect(large).toMatchObject({ status: 413, body: { code: 41012 } });
    const media = await fetch(`${agent.base}/submit-complaint`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(media.status).toBe(415);
    expect(((await media.json()) as { code: number }).code).toBe(41013);
    const status = await agent.get('/status');
    expect(status.body).toMatchObject({ code: 0, wallet: agentAddress, chainId: 97, didSource: 'contract' });
    expect(JSON.stringify(status.body)).not.toContain(chain.rpcUrl);
    const document = await agent.get('/openapi.json');
    expect(Object.keys(document.body.paths)).toEqual(
      expect.arrayContaining(['/submit-complaint', '/complaint-status']),
    );
  });

  it('starts without its chain: 503 for complaints until the chain id of agent.rpc is known', async () => {
    const early = await startTestAgent(
      db,
      agentTestConfig({
        rpc: 'http://127.0.0.1:9',
        contractAddr: chain.contracts.reputation,
        chainId: undefined,
      }),
      undefined,
      { waitForChain: false },
    );
    try {
      const answer = await early.post('/submit-complaint', await body(sampleComplaint()));
      expect(answer).toMatchObject({ status: 503, body: { code: AGENT_ERRORS.CHAIN_UNAVAILABLE.code } });
      expect((await early.get('/status')).body).toMatchObject({
        chainId: null,
        submitter: { chainOk: false },
      });
      const health = await fetch(`${early.base}/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({
        status: 'degraded',
        checks: {
          sender: {
            ok: false,
            error: 'the chain id of agent.rpc has not been read yet: nothing is sent',
          },
        },
      });
      // The Agent of this suite, bound to its chain and sending, is well.
      expect(await (await fetch(`${agent.base}/health`)).json()).toMatchObject({
        status: 'ok',
        checks: { sender: { ok: true } },
      });
    } finally {
      await early.close();
    }
  });

  it('limits complaints per DID domain (counted only for its owner) and requests per client', async () => {
    const limited = await startTestAgent(
      db,
      agentTestConfig({
        rpc: chain.rpcUrl,
        contractAddr: chain.contracts.reputation,
        domainRateLimit: { max: 2, windowMs: 60_000 },
        rateLimit: { max: 14, windowMs: 60_000 },
      }),
    );
    try {
      // A stranger naming the domain is refused for the signature and uses none of the domain's budget.
      for (let i = 0; i < 3; i++) {
        const junk = await limited.post('/submit-complaint', await body(sampleComplaint(), stranger, DOMAIN));
        expect(junk.body.code).toBe(AGENT_ERRORS.NOT_DOMAIN_OWNER.code);
      }
      for (let i = 0; i < 2; i++)
        expect((await limited.post('/submit-complaint', await body(sampleComplaint()))).body.code).toBe(0);
      const third = await fetch(`${limited.base}/submit-complaint`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(await body(sampleComplaint())),
      });
      expect(third.status).toBe(429);
      expect(((await third.json()) as { code: number }).code).toBe(AGENT_ERRORS.DOMAIN_RATE_LIMITED.code);
      // errors.ts promises Retry-After, as the client IP limit's answer has it.
      expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(Number(third.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      // Another domain (the LP's) still has its budget; a stranger's complaint uses none of it.
      const ofLp = () => sampleComplaint({ lpId: 'stranger-6.devnet' });
      const notParty = await limited.post(
        '/submit-complaint',
        await body(sampleComplaint(), stranger, 'stranger-6.devnet'),
      );
      expect(notParty.body.code).toBe(AGENT_ERRORS.NOT_A_PARTY.code);
      expect(
        (await limited.post('/submit-complaint', await body(ofLp(), stranger, 'stranger-6.devnet'))).body
          .code,
      ).toBe(0);
      expect(
        (await limited.post('/submit-complaint', await body(ofLp(), stranger, 'stranger-6.devnet'))).body
          .code,
      ).toBe(0);
      const answers = [];
      for (let i = 0; i < 8; i++) answers.push(await limited.get('/complaint-status?bid=12'));
      expect(answers.at(-1)).toMatchObject({ status: 429, body: { code: AGENT_ERRORS.RATE_LIMITED.code } });
    } finally {
      await limited.close();
    }
  }, 60_000);

  /**
   * With [[chainClients]] (the swap chains' EVM ids) the Agent checks the agreement's own signatures before it
   * pays gas (agreement-proof.ts), its DID source here the devnet registry (one read for every candidate).
   * Both of the sample's chains are mapped to the devnet's chain 97.
   */
  it('refuses a complaint whose userSign or lpSign proves nothing (41026), and files one both parties signed', async () => {
    const checking = await startTestAgent(db, config(), undefined, {
      swapChains: new Map([
        ['9006', chain.chainId],
        ['614', chain.chainId],
      ]),
    });
    try {
      // The complaints of the tests before are on chain first: the refusals below count the Agent's transactions.
      await waitFor(
        async () =>
          (
            await db.pool.query(
              "SELECT 1 FROM agent_complaints WHERE status NOT IN ('confirmed', 'failed') LIMIT 1",
            )
          ).rowCount === 0,
        'the complaints before settled',
        20_000,
      );
      const lp = new Wallet(chain.accounts[8]!.privateKey);
      await registerDids(chain, { 'lp-8.devnet': lp.address });
      const zero = '0x0000000000000000000000000000000000000000';
      const T = 1_950_000_000 + Math.floor(Math.random() * 1_000_000);
      const terms = (n: number): Agreement => ({
        srcChainId: 9006n,
        srcAddress: complainant.address,
        srcToken: zero,
        srcAmount: `${n}`,
        dstChainId: 614n,
        dstAddress: complainant.address,
        dstToken: zero,
        dstAmount: '990',
        dstNativeAmount: '0',
        requestor: complainant.address,
        lpId: 'lp-8.devnet',
        agreementReachedTime: BigInt(T),
        expectedSingleStepTime: 60n,
        tolerantSingleStepTime: 120n,
        earliestRefundTime: BigInt(T + 600),
      });
      const evm = { srcEvmChainId: chain.chainId, dstEvmChainId: chain.chainId };
      const filed = async (keys: { userKey: string; lpKey: string }, n: number) => {
        const complaint = sdkComplaintOf(signAgreement(terms(n), keys, evm));
        const before = await counts();
        const answer = await checking.post('/submit-complaint', await body(complaint));
        return { answer, before };
      };
      const refused = async (keys: { userKey: string; lpKey: string }, n: number, reason: RegExp) => {
        const { answer, before } = await filed(keys, n);
        expect(answer.status).toBe(400);
        expect(answer.body).toEqual({
          code: AGENT_ERRORS.UNPROVEN_AGREEMENT.code,
          message: expect.stringMatching(reason),
        });
        await new Promise((r) => setTimeout(r, 300));
        expect(await counts()).toEqual(before);
      };
      // The complainant (account 5) is the sample's requestor: a party, whose own key it holds.
      await refused(
        { userKey: complainant.privateKey, lpKey: complainant.privateKey },
        7_001,
        /^lpSign does not recover an address whose DID names include lp-8\.devnet under OtmoicSwap\{chainId 97\}/,
      );
      await refused(
        { userKey: stranger.privateKey, lpKey: lp.privateKey },
        7_002,
        new RegExp(`^userSign does not recover the requestor ${complainant.address}`),
      );
      const { answer } = await filed({ userKey: complainant.privateKey, lpKey: lp.privateKey }, 7_003);
      expect(answer.body).toMatchObject({ code: 0, status: 'accepted' });
      const metrics = await checking.metrics.metrics();
      expect(metrics).toMatch(/agent_complaint_agreement_checks_total\{result="proven"\} 1\b/);
      expect(metrics).toMatch(/agent_complaint_refusals_total\{reason="UNPROVEN_AGREEMENT"\} 2\b/);
      expect((await settled(answer.body.bid_id as string)).status).toBe('confirmed');
    } finally {
      await checking.close();
    }
  }, 60_000);
});
