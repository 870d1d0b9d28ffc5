/**
 * The classifier's thin shell around the pure decision (judge.ts): it joins chain events into swaps, keeps
 * each chain's clock, and records and publishes each swap's one verdict and at most one violation, all in the
 * transaction that also records the input message (exactly-once effects).
 *
 * Every transaction of one classifier group takes one advisory lock first. Events of a swap come from
 * several chains, which the bus hands to concurrent partition workers; the lock makes "read the facts,
 * decide, write" one step, so no fact is lost between a TransferIn and its TransferOut arriving together.
 */
import { applyOnce } from '../../shared/bus/apply-once.js';
import type { EventBus, HandlerContext } from '../../shared/bus/port.js';
import { withTransaction, type Pool, type PoolClient } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logging/logger.js';
import {
  encode,
  envelope,
  swapVerdicts,
  verdictId,
  violationId,
  violations,
  type ChainEvent,
  type ChainHeight,
  type SwapVerdict,
  type Violation,
} from '../../topics/index.js';
import type { DidNames } from './did-source.js';
import { addFact, emptyFacts, type JudgeEnv, type SwapFacts } from './facts.js';
import { judge } from './judge.js';
import type { ClassifierMetrics } from './metrics.js';
import type { ClassifierTables } from './tables.js';

export interface WatchedChain {
  evmChainId: number;
  /** The chain has a reputation contract (its complaint stream has a clock of its own). */
  reputation: boolean;
}

export interface EngineOptions {
  pool: Pool;
  tables: ClassifierTables;
  /** Consumer group: the dedupe key of processed input messages and the name of the lock. */
  group: string;
  chains: ReadonlyMap<string, WatchedChain>;
  did: DidNames;
  /** Live: publish verdicts and violations. A replay only records them. */
  bus?: EventBus;
  metrics?: ClassifierMetrics;
  log: Logger;
}

type Stream = 'swap' | 'reputation';

/** Per-transaction view of the clocks (small table, read once per transaction). */
type Clocks = Map<string, number>;
const clockKey = (chainId: string, stream: Stream) => `${chainId}/${stream}`;

export class ClassifierEngine {
  private readonly didWanted = new Set<string>();

  constructor(private readonly o: EngineOptions) {}

  /** chain.events: one event joins its swap (or waits for it), and the swap is judged again. */
  async handleEvent(id: string, event: ChainEvent, context: HandlerContext): Promise<void> {
    await applyOnce(this.o.pool, this.o.group, id, context, async (tx) => {
      await this.lock(tx);
      const clocks = await this.loadClocks(tx);
      const swap = await this.route(tx, id, event);
      if (swap !== null) await this.judgeAndSave(tx, swap, clocks);
      // Heights that waited for this event may now move their chain's clock.
      const released = await tx.query<{
        chain_id: string;
        stream: Stream;
        height: string;
        block_time: string;
      }>(
        `DELETE FROM ${this.o.tables.pendingHeights} WHERE last_event_id = $1 RETURNING chain_id, stream, height, block_time`,
        [id],
      );
      for (const h of released.rows)
        await this.advanceClock(tx, clocks, h.chain_id, h.stream, Number(h.height), Number(h.block_time));
    });
    this.flushDidRequests();
  }

  /** chain.heights: a chain's clock moves once every event up to the height has been handled. */
  async handleHeight(id: string, height: ChainHeight, context: HandlerContext): Promise<void> {
    await applyOnce(this.o.pool, this.o.group, id, context, async (tx) => {
      await this.lock(tx);
      const clocks = await this.loadClocks(tx);
      const seen =
        height.lastEventId === null ||
        (
          await tx.query('SELECT 1 FROM processed_events WHERE consumer = $1 AND event_id = $2', [
            this.o.group,
            height.lastEventId,
          ])
        ).rowCount === 1;
      if (seen) {
        await this.advanceClock(
          tx,
          clocks,
          height.chainId,
          height.stream,
          height.height,
          height.blockTimestamp,
        );
      } else {
        await tx.query(
          `INSERT INTO ${this.o.tables.pendingHeights} (chain_id, stream, height, block_time, last_event_id)
           VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
          [height.chainId, height.stream, height.height, height.blockTimestamp, height.lastEventId],
        );
      }
    });
    this.flushDidRequests();
  }

  /** A DID answer arrived: the swaps that waited for it are judged again. */
  async didAnswered(address: string): Promise<void> {
    await withTransaction(this.o.pool, async (tx) => {
      await this.lock(tx);
      const clocks = await this.loadClocks(tx);
      const waiting = await tx.query<{ bid_id: string }>(
        `SELECT bid_id FROM ${this.o.tables.swaps}
          WHERE status = 'pending' AND wait_kind = 'did' AND wait_address = $1 ORDER BY bid_id`,
        [address.toLowerCase()],
      );
      for (const { bid_id } of waiting.rows) await this.evaluate(tx, bid_id, clocks);
    });
    this.flushDidRequests();
  }

  /** Addresses pending swaps wait for (after a restart, the in-memory requests are gone). */
  async requestPendingDids(): Promise<void> {
    const { rows } = await this.o.pool.query<{ wait_address: string }>(
      `SELECT DISTINCT wait_address FROM ${this.o.tables.swaps} WHERE status = 'pending' AND wait_kind = 'did'`,
    );
    for (const row of rows) this.o.did.request(row.wait_address);
  }

  private async lock(tx: PoolClient): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`classifier:${this.o.group}`]);
  }

  private flushDidRequests(): void {
    for (const address of this.didWanted) this.o.did.request(address);
    this.didWanted.clear();
  }

  private async loadClocks(tx: PoolClient): Promise<Clocks> {
    const { rows } = await tx.query<{ chain_id: string; stream: Stream; block_time: string }>(
      `SELECT chain_id, stream, block_time FROM ${this.o.tables.clocks}`,
    );
    return new Map(rows.map((r) => [clockKey(r.chain_id, r.stream), Number(r.block_time)]));
  }

  private env(clocks: Clocks, bidId: string): JudgeEnv {
    const reputationChains = [...this.o.chains].filter(([, c]) => c.reputation).map(([id]) => id);
    return {
      now: (chainId) => clocks.get(clockKey(chainId, 'swap')),
      complaintsSeenThrough: () => {
        if (reputationChains.length === 0) return Number.POSITIVE_INFINITY;
        let min = Number.POSITIVE_INFINITY;
        for (const chainId of reputationChains) {
          const t = clocks.get(clockKey(chainId, 'reputation'));
          if (t === undefined) return undefined;
          min = Math.min(min, t);
        }
        return min;
      },
      evmChainId: (chainId) => this.o.chains.get(chainId)?.evmChainId,
      didNames: (address) => this.o.did.names(address, bidId),
    };
  }

  private async advanceClock(
    tx: PoolClient,
    clocks: Clocks,
    chainId: string,
    stream: Stream,
    height: number,
    blockTime: number,
  ): Promise<void> {
    const t = this.o.tables;
    await tx.query(
      `INSERT INTO ${t.clocks} (chain_id, stream, height, block_time) VALUES ($1, $2, $3, $4)
       ON CONFLICT (chain_id, stream) DO UPDATE
         SET height = GREATEST(${t.clocks}.height, EXCLUDED.height),
             block_time = GREATEST(${t.clocks}.block_time, EXCLUDED.block_time)`,
      [chainId, stream, height, blockTime],
    );
    const key = clockKey(chainId, stream);
    const now = Math.max(clocks.get(key) ?? 0, blockTime);
    clocks.set(key, now);
    this.o.metrics?.clock.set({ chain: chainId, stream }, now);
    const due =
      stream === 'swap'
        ? await tx.query<{ bid_id: string }>(
            `SELECT bid_id FROM ${t.swaps} WHERE status = 'pending' AND wait_kind = 'clock'
               AND wait_chain = $1 AND wait_until <= $2 ORDER BY bid_id`,
            [chainId, now],
          )
        : await tx.query<{ bid_id: string }>(
            `SELECT bid_id FROM ${t.swaps} WHERE status = 'pending' AND wait_kind = 'complaints'
               AND wait_until <= $1 ORDER BY bid_id`,
            [Math.min(this.env(clocks, '').complaintsSeenThrough() ?? -1, Number.MAX_SAFE_INTEGER)],
          );
    for (const { bid_id } of due.rows) await this.evaluate(tx, bid_id, clocks);
  }

  /**
   * Joins an event to its swap (in memory; the caller judges and writes the swap once), or keeps it until its
   * swap is known. Returns the swap to judge, or null.
   */
  private async route(tx: PoolClient, id: string, event: ChainEvent): Promise<Loaded | null> {
    const t = this.o.tables;
    const orphan = async (ref: string) => {
      await tx.query(
        `INSERT INTO ${t.orphans} (event_id, ref, event) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
        [id, ref, JSON.stringify(event)],
      );
      return null;
    };
    const join = async (where: string, value: string): Promise<Loaded | null> => {
      const { rows } = await tx.query<{ facts: SwapFacts; status: string }>(
        `SELECT facts, status FROM ${t.swaps} WHERE ${where} = $1`,
        [value],
      );
      const row = rows[0];
      return row ? { facts: addFact(row.facts, event), decided: row.status === 'decided' } : null;
    };

    switch (event.kind) {
      case 'TransferOut': {
        const existing = await this.load(tx, event.bidId);
        if (existing?.facts.out) {
          if (existing.facts.out.transferId !== event.transferId)
            this.o.log.warn(
              { bidId: event.bidId, transferId: event.transferId, first: existing.facts.out.transferId },
              'a second TransferOut with the same bid is not the swap; ignored',
            );
          return null;
        }
        const swap = existing ?? { facts: emptyFacts(event.bidId), decided: false };
        swap.facts = await this.adopt(tx, addFact(swap.facts, event), event.transferId);
        return swap;
      }
      case 'TransferIn': {
        const swap = await join('out_transfer_id', event.srcTransferId);
        if (swap === null) return orphan(event.srcTransferId);
        swap.facts = await this.adopt(tx, swap.facts, event.transferId);
        return swap;
      }
      case 'ConfirmOut':
      case 'RefundOut':
        return (await join('out_transfer_id', event.transferId)) ?? orphan(event.transferId);
      case 'ConfirmIn':
      case 'RefundIn': {
        const link = await tx.query<{ bid_id: string }>(
          `SELECT bid_id FROM ${t.inLinks} WHERE in_transfer_id = $1`,
          [event.transferId],
        );
        const bid = link.rows[0]?.bid_id;
        return bid === undefined ? orphan(event.transferId) : join('bid_id', bid);
      }
      case 'Complaint': {
        const existing = await this.load(tx, event.bidId);
        const swap = existing ?? { facts: emptyFacts(event.bidId), decided: false };
        swap.facts = addFact(swap.facts, event);
        return swap;
      }
    }
  }

  /**
   * Events that named a transfer of this swap before it was known join it, transitively (a TransferIn brings
   * its ConfirmIn / RefundIn); every TransferIn of the swap is linked for the ones still to come.
   */
  private async adopt(tx: PoolClient, facts: SwapFacts, ref: string): Promise<SwapFacts> {
    const t = this.o.tables;
    let joined = facts;
    const refs = [ref];
    const links: string[] = [];
    for (const e of facts.ins) if (e.transferId === ref) links.push(ref);
    while (refs.length > 0) {
      const next = refs.pop()!;
      const { rows } = await tx.query<{ event: ChainEvent }>(
        `DELETE FROM ${t.orphans} WHERE ref = $1 RETURNING event`,
        [next],
      );
      for (const { event } of rows) {
        joined = addFact(joined, event);
        if (event.kind === 'TransferIn') {
          links.push(event.transferId);
          refs.push(event.transferId);
        }
      }
    }
    if (links.length > 0) {
      await tx.query(
        `INSERT INTO ${t.inLinks} (in_transfer_id, bid_id) SELECT unnest($1::text[]), $2 ON CONFLICT DO NOTHING`,
        [links, facts.bidId],
      );
    }
    return joined;
  }

  private async load(tx: PoolClient, bid: string): Promise<Loaded | null> {
    const { rows } = await tx.query<{ facts: SwapFacts; status: string }>(
      `SELECT facts, status FROM ${this.o.tables.swaps} WHERE bid_id = $1`,
      [bid],
    );
    return rows[0] ? { facts: rows[0].facts, decided: rows[0].status === 'decided' } : null;
  }

  /** Judges a stored pending swap again (its chain's clock moved, or a DID answer came). */
  private async evaluate(tx: PoolClient, bid: string, clocks: Clocks): Promise<void> {
    const swap = await this.load(tx, bid);
    if (swap && !swap.decided) await this.judgeAndSave(tx, swap, clocks);
  }

  /**
   * Writes the swap once: its facts and either what it waits for or its verdict; a decided swap's verdict
   * (and violation) is recorded and published in the same transaction. A decided swap is never judged again
   * (a late event is kept with its facts).
   */
  private async judgeAndSave(tx: PoolClient, swap: Loaded, clocks: Clocks): Promise<void> {
    const t = this.o.tables;
    const { facts } = swap;
    const judgement = swap.decided ? null : judge(facts, this.env(clocks, facts.bidId));
    const wait = judgement?.status === 'pending' ? judgement.wait : null;
    const status = judgement === null || judgement.status === 'decided' ? 'decided' : 'pending';
    await tx.query(
      `INSERT INTO ${t.swaps} (bid_id, out_transfer_id, facts, status, wait_kind, wait_chain, wait_until, wait_address, waiting_for, decided_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $4 = 'decided' THEN now() END)
       ON CONFLICT (bid_id) DO UPDATE SET
         out_transfer_id = EXCLUDED.out_transfer_id, facts = EXCLUDED.facts, status = EXCLUDED.status,
         wait_kind = EXCLUDED.wait_kind, wait_chain = EXCLUDED.wait_chain, wait_until = EXCLUDED.wait_until,
         wait_address = EXCLUDED.wait_address, waiting_for = EXCLUDED.waiting_for,
         decided_at = COALESCE(${t.swaps}.decided_at, EXCLUDED.decided_at)`,
      [
        facts.bidId,
        facts.out?.transferId ?? null,
        JSON.stringify(facts),
        status,
        wait?.kind ?? null,
        wait?.kind === 'clock' ? wait.chainId : null,
        wait && wait.kind !== 'did' ? wait.until : null,
        wait?.kind === 'did' ? wait.address : null,
        judgement?.status === 'pending' ? judgement.reason : null,
      ],
    );
    if (wait?.kind === 'did') this.didWanted.add(wait.address);
    if (judgement?.status !== 'decided') return;
    const verdict = judgement.verdict;
    const bid = facts.bidId;
    await tx.query(`INSERT INTO ${t.verdicts} (bid_id, verdict) VALUES ($1, $2)`, [
      bid,
      JSON.stringify(verdict),
    ]);
    const violation = violationOf(verdict);
    if (violation) {
      await tx.query(`INSERT INTO ${t.violations} (bid_id, violation) VALUES ($1, $2)`, [
        bid,
        JSON.stringify(violation),
      ]);
    }
    if (this.o.bus) {
      const source = 'classifier';
      await this.o.bus.publish(
        swapVerdicts.name,
        [
          encode(
            swapVerdicts,
            envelope(swapVerdicts, verdict, { id: verdictId(bid), occurredAt: verdict.blockTime, source }),
          ),
        ],
        { tx },
      );
      if (violation) {
        await this.o.bus.publish(
          violations.name,
          [
            encode(
              violations,
              envelope(violations, violation, {
                id: violationId(bid),
                occurredAt: violation.blockTime,
                source,
              }),
            ),
          ],
          { tx },
        );
      }
    }
    this.o.metrics?.decided(verdict, clocks.get(clockKey(verdict.decidedOn, 'swap')));
  }
}

/** A swap as read (or created) in this transaction. */
interface Loaded {
  facts: SwapFacts;
  decided: boolean;
}

/** The deduction-worthy part of a verdict: cases 1–7 (case 0 and unknown deduct nothing). */
export function violationOf(v: SwapVerdict): Violation | null {
  if (v.outcome !== 'violation' || v.party === null || v.subject === null || v.case === null || v.case < 1)
    return null;
  return {
    party: v.party,
    subject: v.subject,
    case: v.case,
    bidId: v.bidId,
    srcChainId: v.srcChainId,
    dstChainId: v.dstChainId,
    chainId: v.decidedOn,
    transactions: v.transactions,
    blockTime: v.blockTime,
    rule: v.rule,
  };
}
