import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../shared/db/migrate.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { chainEventId, type ChainEvent } from '../../topics/index.js';
import type { ClassifierInput } from './engine.js';
import { batchContext, finalHeights, HONEST_SWAP, syntheticEngine } from './judge-test-kit.js';
import { classifierMigrations } from './migrations.js';
import { classifierTables } from './tables.js';
import { buildTimeline, DST, LP, SRC, STRANGER } from './swap-timeline.js';

type TransferIn = Extract<ChainEvent, { kind: 'TransferIn' }>;
const hex = (n: number) => '0x' + n.toString(16).padStart(64, '0');

/**
 * The LP never answers the user's lock, yet tries to escape case 3: a wallet of its own (a stranger to the
 * DID support) makes a TransferIn naming the lock, and the LP makes a TransferIn on the agreement's terms
 * but with a hashlock only it knows, naming that TransferIn's transfer id instead of the lock's. The engine
 * links a TransferIn's id so that its ConfirmIn / RefundIn join the swap; a TransferIn naming it joined as
 * well, and the judge took it for an answer to another lock of the agreement: "unknown", never deducted.
 * DESIGN §7: the swap's TransferIn is one whose srcTransferId is the TransferOut's transferId, and only the
 * user's own second lock of the agreement is another lock (answered-copy.test.ts): this is case 3.
 */
const t = buildTimeline({
  ...HONEST_SWAP,
  out: { kind: 'ok', at: 1000 },
  in: { kind: 'ok', at: 1002 },
  griefIn: { at: 1001 },
  confirmOut: undefined,
  confirmIn: undefined,
});
const source = t.streams[SRC.chainId]!;
const destination = t.streams[DST.chainId]!;
const decoy = destination.find(
  (e): e is TransferIn => e.kind === 'TransferIn' && e.sender === STRANGER.address,
)!;
const honestAnswer = destination.find(
  (e): e is TransferIn => e.kind === 'TransferIn' && e.sender === LP.address,
)!;
// The LP's TransferIn: the agreement's terms, a hashlock of its own, naming the decoy's transfer.
const evasion: TransferIn = {
  ...honestAnswer,
  srcTransferId: decoy.transferId,
  hashlock: hex(0xbad),
  transferId: hex(0xe7a5),
  txHash: hex(0xe7a5e),
};
// The same, its decoy on the source chain (a TransferIn there is dropped from the facts, but still linked).
const decoyOnSource: TransferIn = {
  ...decoy,
  chainId: SRC.chainId,
  transferId: hex(0xdec0),
  txHash: hex(0xdec0e),
  blockNumber: source.at(-1)!.blockNumber + 1,
};
const evasionOfSourceDecoy: TransferIn = { ...evasion, srcTransferId: decoyOnSource.transferId };

const input = (e: ChainEvent): ClassifierInput => ({ kind: 'event', id: chainEventId(e), event: e });

describe('a TransferIn naming another TransferIn is no answer to the swap', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([classifierMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });

  const orders: Array<[string, ChainEvent[]]> = [
    ['in chain order', [...source, decoy, evasion]],
    ['the evasion first (an orphan adopted through the decoy)', [evasion, ...source, decoy]],
    ['the destination chain first', [decoy, evasion, ...source]],
    ['the decoy on the source chain', [...source, decoyOnSource, evasionOfSourceDecoy]],
    ['the decoy on the source chain, the evasion first', [evasionOfSourceDecoy, decoyOnSource, ...source]],
  ];
  let n = 0;
  for (const [name, order] of orders) {
    for (const resident of [false, true]) {
      it(`${name}${resident ? ', replayed' : ''}: case 3 against the LP`, async () => {
        const { engine, tables } = await syntheticEngine(
          db.pool,
          `evasion_${n++}`,
          resident ? 'keep' : undefined,
        );
        // One message at a time, as the topics deliver them, then every clock past every window.
        for (const e of order) await engine.handleBatch([input(e)], batchContext());
        for (const h of finalHeights(2_000)) await engine.handleBatch([h], batchContext());
        await engine.writeResident();
        const { rows } = await db.pool.query<{
          verdict: { outcome: string; case: number | null; party: string | null };
        }>(`SELECT verdict FROM ${tables.verdicts} WHERE bid_id = $1`, [t.bidId]);
        expect(rows.map((r) => [r.verdict.outcome, r.verdict.case, r.verdict.party])).toEqual([
          ['violation', 3, 'lp'],
        ]);
      });
    }
  }
});

describe('migration 5: the links written before it', () => {
  it('marks as locks those of the copies of an agreement, and only those', async () => {
    const before = { ...classifierMigrations, migrations: classifierMigrations.migrations.slice(0, 4) };
    const db = await createTestDatabase([before]);
    try {
      const t = classifierTables();
      // What the engine wrote before: a copy lock of the agreement (recorded as ignored, linked) and a
      // TransferIn (linked for its ConfirmIn); a foreign TransferOut is recorded but never linked.
      await db.pool.query(
        `INSERT INTO ${t.ignoredOuts} (event_id, bid_id, chain_id, transfer_id, reason, detail, event)
         VALUES ('e-copy', 'bid', '9006', 'copy-lock', 'copy', 'a later lock', '{}'),
                ('e-foreign', 'bid', '9006', 'foreign-lock', 'foreign', 'not the swap', '{}')`,
      );
      await db.pool.query(
        `INSERT INTO ${t.inLinks} (in_transfer_id, bid_id) VALUES ('copy-lock', 'bid'), ('transfer-in', 'bid')`,
      );
      await migrate(db.pool, [classifierMigrations]);
      const { rows } = await db.pool.query<{ in_transfer_id: string; lock: boolean }>(
        `SELECT in_transfer_id, lock FROM ${t.inLinks} ORDER BY in_transfer_id`,
      );
      expect(rows).toEqual([
        { in_transfer_id: 'copy-lock', lock: true },
        { in_transfer_id: 'transfer-in', lock: false },
      ]);
    } finally {
      await db.drop();
    }
  });
});
