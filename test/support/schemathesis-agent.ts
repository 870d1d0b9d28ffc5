/**
 * `test/support/schemathesis.sh` runs this after the relay's run: an Agent on a fresh devnet and a fresh
 * database, then schemathesis against the Agent's served OpenAPI document (schemathesis-target.ts). DID
 * ownership is read from the devnet's registry; the rate limits are out of the way. One complaint is accepted
 * first, signed as the SDK signs it, so `/complaint-status` is fuzzed with its bid too (while it goes on chain).
 */
import { Wallet } from 'ethers';
import { Registry } from 'prom-client';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { registerDids } from '../../shared/devnet/agreements.js';
import { startDevnet } from '../../shared/devnet/devnet.js';
import { createLogger } from '../../shared/logging/logger.js';
import { startAgent } from '../../services/agent/index.js';
import { agentMigrationSets } from '../../services/agent/migrations.js';
import { agentTestConfig, sampleComplaint, sdkBody } from '../../services/agent/test-harness.js';
import { complaintCommands } from '../../topics/complaint.commands.js';
import { topicSpec } from '../../topics/envelope.js';
import { runSchemathesis, seedThroughApi } from './schemathesis-target.js';

await runSchemathesis({
  name: 'agent',
  migrations: agentMigrationSets,
  async serve({ pool, url }, cleanups) {
    const devnet = await startDevnet({ chains: [{ chainId: 97 }] });
    cleanups.push(() => devnet.stop());
    const chain = devnet.chain(97);
    const log = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
    const bus = new PostgresBus({ pool, connectionString: url, log, idlePollMs: 200 });
    await bus.ensureTopics([topicSpec(complaintCommands, 4)]);
    cleanups.push(() => bus.close());
    const agent = await startAgent(
      { db: pool, bus, log, metrics: new Registry() },
      agentTestConfig({ rpc: chain.rpcUrl, contractAddr: chain.contracts.reputation, didSource: 'contract' }),
    );
    cleanups.push(() => agent.stop());
    const base = `http://127.0.0.1:${agent.port}`;

    const complainant = new Wallet(chain.accounts[5]!.privateKey);
    const domain = 'schemathesis-5.devnet';
    await registerDids(chain, { [domain]: complainant.address });
    const body = await sdkBody(complainant, sampleComplaint(), domain, {
      chainId: chain.chainId,
      reputation: chain.contracts.reputation,
    });
    const bid = await seedThroughApi(`${base}/submit-complaint`, body, 'bid_id');
    return { base, openapiPath: '/openapi.json', known: { 'query.bid': [bid] } };
  },
});
