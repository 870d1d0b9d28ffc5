/**
 * The deployment (EVM chain + contract) that owns a systemChainId's commands in a database, and the commands
 * an older version stored. Before: relays of two contracts under one systemChainId on one database each
 * sent the other's commands to their own contract (the estimate reverted and the command failed, never sent
 * where it belonged), and a command of one had the same id as the other's for the same transferId; a retry of
 * a command stored under an older id scheme (v1) made a second command for the transfer; and a command
 * whose window an older version stored otherwise (before a relay wallet that is the lock's sender confirmed
 * as that party) was ordered by that stale window, behind 100 others, and never sent.
 */
import { createHash } from 'node:crypto';
import { Contract, ContractFactory, getAddress, hexlify, randomBytes } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileContracts } from '../../contracts/compile.js';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { lockSwap, type LockedSwap } from '../../shared/devnet/swap-scenarios.js';
import { swapInterface } from '../../shared/otmoic/abi.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { encode, envelope } from '../../topics/envelope.js';
import { relayCommands, type RelayCommand } from '../../topics/relay.commands.js';
import { parseCommandBody, type RelayAction } from './command-body.js';
import { relayMigrationSets } from './migrations.js';
import { behalfBody, relayTestConfig, startTestRelay } from './test-harness.js';
import { callWindow } from './windows.js';

/** Hardhat account 3 is the relay's wallet (RELAY_DEV_KEY). */
const RELAY_ACCOUNT = 3;

/** The ids of earlier versions: v1 (318f7c6, hashed every term and the gas strategy), v2 (a9e9ee5). */
function legacyId(version: 'v1' | 'v2', command: RelayCommand, chainId: number): string {
  const c = command.call;
  const canonical =
    version === 'v1'
      ? [
          'relay-command/v1',
          command.action,
          command.systemChainId,
          String(chainId),
          c.sender,
          c.receiver,
          c.token,
          c.tokenAmount,
          c.ethAmount,
          c.hashlock,
          String(c.expectedSingleStepTime),
          String(c.tolerantSingleStepTime),
          String(c.earliestRefundTime),
          String(c.agreementReachedTime),
          c.preimage ?? '',
          command.transactionType,
          command.gasPrice,
        ]
      : [
          'relay-command/v2',
          command.action,
          command.systemChainId,
          String(chainId),
          command.transferId,
          command.transactionType,
        ];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

describe('relay deployment of a systemChainId, and commands stored by older versions', () => {
  let db: TestDatabase;
  let devnet: Devnet;
  let chain: DevnetChain;
  let relay: Awaited<ReturnType<typeof startTestRelay>>;
  const legacy: Record<string, { id: string; locked: LockedSwap }> = {};

  /** A row as an older version stored it: no deployment, the window that version computed. */
  const insertLegacyRow = async (
    action: RelayAction,
    command: RelayCommand,
    window: { start: number; end: number | null },
  ) => {
    await db.pool.query(
      `INSERT INTO relay_commands (id, system_chain_id, action, transfer_id, command, metadata, status, window_start, window_end)
       VALUES ($1, $2, $3, $4, $5, '{}', 'scheduled', $6, $7)`,
      [
        command.commandId,
        command.systemChainId,
        action,
        command.transferId,
        command,
        window.start,
        window.end,
      ],
    );
  };
  const parsed = (action: RelayAction, body: unknown) =>
    parseCommandBody(action, body, {
      systemChainId: '9006',
      chainId: 97,
      contractAddr: chain.contracts.otmoic,
      senderWallets: {},
    }).command;
  const confirmInBody = (locked: LockedSwap) =>
    behalfBody(locked.in, 'command_transfer_in_confirm', locked.preimage);

  beforeAll(async () => {
    [db, devnet] = await Promise.all([
      createTestDatabase(relayMigrationSets),
      startDevnet({ chains: [{ chainId: 97 }] }),
    ]);
    chain = devnet.chain(97);
    const lock = (lp = 2) =>
      lockSwap({
        src: chain,
        dst: chain,
        srcSystemChainId: 9006,
        dstSystemChainId: 9006,
        parties: { user: 1, lp },
      });

    // Commands a relay accepted before this version, for transfers still pending (third-party windows ahead).
    for (const version of ['v1', 'v2'] as const) {
      const locked = await lock();
      const command = parsed('confirm_in', confirmInBody(locked));
      const id = legacyId(version, command, 97);
      await insertLegacyRow(
        'confirm_in',
        { ...command, commandId: id },
        callWindow('confirm_in', command.call, '0x0'),
      );
      legacy[version] = { id, locked };
    }

    // The relay wallet is the LP: its confirm_in is due from T. The version before 06dcace stored the
    // third-party window, 100 refunds whose windows open before that one and after the test are stored too.
    const party = await lock(RELAY_ACCOUNT);
    const { T, E, Tol } = party.times;
    const command = parsed('confirm_in', confirmInBody(party));
    const thirdParty = { start: T + 3 * E + Tol, end: T + 3 * E + 2 * Tol };
    await insertLegacyRow('confirm_in', command, thirdParty);
    for (let i = 0; i < 100; i++) {
      const refund = parsed(
        'refund_out',
        behalfBody(
          { ...party.out, hashlock: hexlify(randomBytes(32)), earliestRefundTime: thirdParty.start - 20 },
          'command_transfer_refund',
        ),
      );
      await insertLegacyRow('refund_out', refund, callWindow('refund_out', refund.call, '0x0'));
    }
    legacy['party'] = { id: command.commandId, locked: party };

    relay = await startRelay();
  }, 120_000);
  const startRelay = () =>
    startTestRelay(
      db,
      relayTestConfig({ rpc: chain.rpcUrl, contractAddr: chain.contracts.otmoic, acceptChecks: true }),
    );
  afterAll(async () => {
    await relay?.close();
    await devnet?.stop();
    await db?.drop();
  });

  it('refuses to start a relay of another contract or EVM chain under the same systemChainId, naming both', async () => {
    const compiled = await compileContracts();
    const factory = new ContractFactory(compiled.Otmoic.abi, compiled.Otmoic.bytecode, chain.wallet(0));
    const other = await (await factory.deploy()).waitForDeployment();
    const otherAddr = await other.getAddress();
    const mine = getAddress(chain.contracts.otmoic);
    // The running relay's sender moves its commands on meanwhile (a loaded machine makes that likely): stopped,
    // so that any change to the rows is the refused relays'.
    await relay.close();
    const before = await db.pool.query('SELECT id, status FROM relay_commands ORDER BY id');

    // A second relay for a new contract version, and a copy-pasted config naming another EVM chain.
    for (const config of [{ contractAddr: otherAddr }, { chainId: 98 }]) {
      const start = startTestRelay(db, relayTestConfig({ rpc: chain.rpcUrl, acceptChecks: true, ...config }));
      await expect(start).rejects.toMatchObject({ code: 'RELAY_DEPLOYMENT_CONFLICT' });
      const message = ((await start.catch((e: Error) => e)) as Error).message;
      expect(message).toContain(`belongs in this database to contract ${mine} on chain 97`);
      expect(message).toContain(
        `configured for contract ${config.contractAddr ?? mine} on chain ${config.chainId ?? 97}`,
      );
      expect(message).toContain('give this relay its own database');
    }
    expect((await db.pool.query('SELECT id, status FROM relay_commands ORDER BY id')).rows).toEqual(
      before.rows,
    );
    relay = await startRelay();
    expect((await relay.get(`/behalf/commands/${legacy['v2']!.id}`)).status).toBe(200);
  });

  it("the consumer leaves another contract's command under the same systemChainId alone", async () => {
    // A relay of another contract sharing the bus (its own database) published this command.
    const theirs = parseCommandBody(
      'refund_out',
      behalfBody(
        {
          ...legacy['v2']!.locked.out,
          hashlock: hexlify(randomBytes(32)),
          earliestRefundTime: (await chain.latestTimestamp()) + 100_000,
        },
        'command_transfer_refund',
      ),
      {
        systemChainId: '9006',
        chainId: 97,
        contractAddr: '0x000000000000000000000000000000000000dEaD',
        senderWallets: {},
      },
    ).command;
    const message = envelope(relayCommands, theirs, { id: theirs.commandId, occurredAt: 1, source: 'test' });
    await relay.bus.publish(relayCommands.name, [encode(relayCommands, message)]);
    const consumed = async () =>
      (await db.pool.query('SELECT 1 FROM processed_events WHERE event_id = $1', [theirs.commandId]))
        .rowCount === 1;
    await waitFor(consumed, 'consumed', 20_000);
    const { rows } = await db.pool.query('SELECT id FROM relay_commands WHERE transfer_id = $1', [
      theirs.transferId,
    ]);
    expect(rows).toEqual([]);
  });

  it('answers a retry of a command stored under an older id with that command: no second command', async () => {
    for (const version of ['v1', 'v2'] as const) {
      const { id, locked } = legacy[version]!;
      const retry = await relay.post('/behalf/confirm_in', confirmInBody(locked));
      expect({ version, ...retry }).toEqual({
        version,
        status: 200,
        body: { code: 200, message: 'Command received', command_id: id, status: 'scheduled' },
      });
      const { rows } = await db.pool.query(
        `SELECT id FROM relay_commands WHERE transfer_id = $1 AND action = 'confirm_in'`,
        [locked.in.transferId],
      );
      expect(rows).toEqual([{ id }]);
      const listed = await relay.get(`/behalf/commands?transfer_id=${locked.in.transferId}`);
      expect(listed.body.commands.map((c: { id: string }) => c.id)).toEqual([id]);
    }
  });

  it('sends a due command whose stored window is stale, ahead of 100 commands not due yet', async () => {
    const { id, locked } = legacy['party']!;
    const { T, E, Tol } = locked.times;
    await chain.setNextBlockTimestamp(Math.max(T, (await chain.latestTimestamp()) + 1));
    await chain.mine();
    const command = async () => (await relay.get(`/behalf/commands/${id}`)).body.command;
    await waitFor(async () => (await command()).status === 'confirmed', 'confirmed', 20_000);
    expect((await command()).window).toEqual({ op: 'lp confirm in', start: T, end: T + 3 * E + Tol });
    const swap = new Contract(chain.contracts.otmoic, swapInterface, chain.provider);
    expect(((await swap.getFunction('swapStatus')(locked.in.transferId)) as [bigint])[0]).toBe(2n);
  }, 60_000);
});
