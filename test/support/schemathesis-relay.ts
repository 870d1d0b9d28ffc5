/**
 * `test/support/schemathesis.sh` runs this: a relay on a fresh devnet and a fresh database, then schemathesis
 * against the relay's served OpenAPI document (schemathesis-target.ts). Chain checks at accept time are on, as
 * in production; the rate limit is out of the way. A swap is locked on the devnet and one confirm_out accepted
 * first, so the command reads (`commands/{id}`, `commands?transfer_id=`) are fuzzed with their found answers too.
 */
import { Registry } from 'prom-client';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { startDevnet } from '../../shared/devnet/devnet.js';
import { lockSwap } from '../../shared/devnet/swap-scenarios.js';
import { createLogger } from '../../shared/logging/logger.js';
import { startRelay } from '../../services/relay/index.js';
import { relayMigrationSets } from '../../services/relay/migrations.js';
import { behalfBody, relayTestConfig } from '../../services/relay/test-harness.js';
import { topicSpec } from '../../topics/envelope.js';
import { relayCommands } from '../../topics/relay.commands.js';
import { runSchemathesis, seedThroughApi } from './schemathesis-target.js';

await runSchemathesis({
  name: 'relay',
  migrations: relayMigrationSets,
  async serve({ pool, url }, cleanups) {
    const devnet = await startDevnet({ chains: [{ chainId: 97 }] });
    cleanups.push(() => devnet.stop());
    const chain = devnet.chain(97);
    const log = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
    const bus = new PostgresBus({ pool, connectionString: url, log, idlePollMs: 200 });
    await bus.ensureTopics([topicSpec(relayCommands, 4)]);
    cleanups.push(() => bus.close());
    const relay = await startRelay(
      { db: pool, bus, log, metrics: new Registry() },
      relayTestConfig({ rpc: chain.rpcUrl, contractAddr: chain.contracts.otmoic, acceptChecks: true }),
    );
    cleanups.push(() => relay.stop());
    const base = `http://127.0.0.1:${relay.port}`;

    const locked = await lockSwap({ src: chain, dst: chain, srcSystemChainId: 9006, dstSystemChainId: 9006 });
    const commandId = await seedThroughApi(
      `${base}/evm-client-9006/relay/behalf/confirm_out`,
      behalfBody(locked.out, 'command_transfer_confirm', locked.preimage),
      'command_id',
    );
    return {
      base,
      openapiPath: '/evm-client-9006/relay/openapi.json',
      known: { 'path.id': [commandId], 'query.transfer_id': [locked.out.transferId] },
    };
  },
});
