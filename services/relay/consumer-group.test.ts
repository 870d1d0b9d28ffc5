/**
 * Relays of two contracts under one systemChainId, each with its own database, on one bus (the Kafka profile).
 * Before: both were members of one consumer group, `relay-submitter-{systemChainId}`, so each read only its
 * share of the partitions; a command read by the other deployment's member was left alone there and stayed
 * `accepted` in its own database for ever (nothing sends an `accepted` command).
 */
import { hexlify, randomBytes, Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaBus } from '../../shared/bus/kafka/kafka-bus.js';
import type { Subscription } from '../../shared/bus/port.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { announceSkip, kafkaForTests } from '../../test/support/external.js';
import { waitFor } from '../../test/support/wait.js';
import { topicSpec } from '../../topics/envelope.js';
import { relayCommands } from '../../topics/relay.commands.js';
import { parseCommandBody } from './command-body.js';
import { relayConsumerGroup, subscribeCommands } from './command-consumer.js';
import { relayMigrationSets } from './migrations.js';
import { CommandStore, type RelayDeployment } from './store.js';
import { behalfBody, RELAY_DEV_KEY } from './test-harness.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('relay consumer groups on Kafka', kafka.skipReason);

const COMMANDS_EACH = 12;
const log = createLogger({ level: 'silent' });

/** Two contracts under one systemChainId; a fresh pair each run (the broker may be shared with earlier runs). */
const tag = hexlify(randomBytes(4)).slice(2);
const deployments: RelayDeployment[] = [
  { systemChainId: '9006', chainId: 97, contractAddr: `0x${tag}${'0'.repeat(31)}a` },
  { systemChainId: '9006', chainId: 97, contractAddr: `0x${tag}${'0'.repeat(31)}b` },
];

describe.skipIf(kafka.skipReason)('relays of two contracts under one systemChainId sharing Kafka', () => {
  let dbs: TestDatabase[] = [];
  const buses: KafkaBus[] = [];
  const subscriptions: Subscription[] = [];

  beforeAll(async () => {
    dbs = await Promise.all(deployments.map(() => createTestDatabase(relayMigrationSets)));
  });
  afterAll(async () => {
    await Promise.all(subscriptions.map((s) => s.stop()));
    await Promise.all(buses.map((b) => b.close()));
    await Promise.all(dbs.map((db) => db.drop()));
  });

  it('each deployment has its own consumer group, and schedules every one of its commands', async () => {
    expect(relayConsumerGroup(deployments[0]!)).not.toBe(relayConsumerGroup(deployments[1]!));
    const wallet = new Wallet(RELAY_DEV_KEY).address;
    const stores = await Promise.all(
      deployments.map(async (deployment, i) => {
        // Each relay's own database holds its commands, outbox and positions; the broker is shared.
        const bus = new KafkaBus({
          brokers: kafka.target!.brokers,
          clientId: `relay-${i}`,
          log,
          pool: dbs[i]!.pool,
          connectionString: dbs[i]!.url,
        });
        buses.push(bus);
        await bus.ensureTopics([topicSpec(relayCommands, 4)]);
        const store = new CommandStore(dbs[i]!.pool, bus, 'relay:9006', wallet, deployment);
        await store.claimDeployment();
        subscriptions.push(
          await subscribeCommands({
            bus,
            pool: dbs[i]!.pool,
            store,
            deployment,
            onScheduled: () => undefined,
          }),
        );
        return store;
      }),
    );

    const accepted: string[][] = [[], []];
    for (let n = 0; n < COMMANDS_EACH; n++) {
      for (const [i, deployment] of deployments.entries()) {
        const side = {
          sender: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
          receiver: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
          token: '0x0000000000000000000000000000000000000000',
          tokenAmount: 1n,
          ethAmount: 0n,
          hashlock: hexlify(randomBytes(32)),
          agreementReachedTime: 1_800_000_000,
          expectedSingleStepTime: 60,
          tolerantSingleStepTime: 120,
          earliestRefundTime: 1_800_000_900,
        };
        const parsed = parseCommandBody('refund_out', behalfBody(side, 'command_transfer_refund'), {
          ...deployment,
          senderWallets: {},
        });
        // Stored `accepted` and published (through its outbox) to the shared topic.
        accepted[i]!.push((await stores[i]!.accept(parsed)).id);
      }
    }

    const statuses = async (i: number) =>
      (
        await dbs[i]!.pool.query<{ status: string }>('SELECT status FROM relay_commands WHERE id = ANY($1)', [
          accepted[i],
        ])
      ).rows.map((r) => r.status);
    const allScheduled = async () =>
      (await Promise.all([0, 1].map(statuses))).every(
        (s) => s.length === COMMANDS_EACH && s.every((status) => status === 'scheduled'),
      );
    await waitFor(allScheduled, 'every command of both deployments scheduled', 30_000).catch(async (err) => {
      throw new Error(
        `${(err as Error).message}: ${JSON.stringify(await Promise.all([0, 1].map(statuses)))}`,
      );
    });
  }, 90_000);
});
