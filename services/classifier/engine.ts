/**
 * The classifier's thin shell around the pure decision (judge.ts): it joins chain events into swaps, keeps
 * each chain's clock, and records and publishes each swap's one verdict and at most one violation, all in the
 * transaction that also records the input message (exactly-once effects).
 *
 * A batch of inputs is one transaction: its rows are read in a fixed number of statements, decided in
 * memory in input order, and written back in a fixed number (working-set.ts).
 *
 * Every transaction of one classifier group takes one advisory lock first. Events of a swap come from
 * several chains, which the bus hands to concurrent partition workers; the lock makes "read the facts,
 * decide, write" one step, so no fact is lost between a TransferIn and its TransferOut arriving together.
 */
import { recordProcessed } from '../../shared/bus/apply-once.js';
import type { BusMessage, EventBus, HandlerContext } from '../../shared/bus/port.js';
import { nulAsText } from '../../shared/db/nul.js';
import { withTransaction, type Pool, type PoolClient } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logging/logger.js';
import {
  chainEventId,
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
import {
  addFact,
  confirmsAnAnswer,
  copyKeysOf,
  displacesOut,
  emptyFacts,
  executesItsBid,
  lockKeysOf,
  type AgreementLock,
  type JudgeEnv,
  type SwapFacts,
  type TransferOut,
} from './facts.js';
import { judge } from './judge.js';
import { missingOf } from './dead-lettered.js';
import type { ClassifierMetrics } from './metrics.js';
import type { ClassifierTables } from './tables.js';
import { discardNewSigners, saveNewSigners } from './signer-memo.js';
import { publishMany } from '../../shared/bus/publish-many.js';
import {
  WorkingSet,
  complaintsSeenThrough,
  clockKey,
  orphanClock,
  readPlan,
  type IgnoredOut,
  type MissingEvent,
  type Stream,
  type StoredSwap,
  type Wait,
} from './working-set.js';

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
  /**
   * A replay into tables only this process writes: keep the state in memory across batches and write only
   * verdicts and violations ('keep': and the whole projection at writeResident(), for inspection).
   */
  resident?: 'decisions' | 'keep';
  metrics?: ClassifierMetrics;
  log: Logger;
  /**
   * Resident (a replay): ids of dead-lettered events the operator released in the live tables; dead-lettered
   * again in the replay, they hold nothing there either.
   */
  releasedHolds?: ReadonlySet<string>;
}

/** One input of a batch: a chain event or a chain height, with its envelope id. */
export type ClassifierInput =
  { kind: 'event'; id: string; event: ChainEvent } | { kind: 'height'; id: string; height: ChainHeight };

export class ClassifierEngine {
  private readonly didWanted = new Set<string>();
  /** DID answers not yet taken by a judging of their waiters (didAnswered). */
  private readonly didAnswers = new Set<string>();
  /** The judging that will take the next answers, once the one running is over. */
  private nextDidJudging: Promise<void> | undefined;
  /** The last judging of DID waiters started (never rejects: only its callers see its failure). */
  private didJudging: Promise<void> = Promise.resolve();
  private readonly reputationChains: string[];
  /** Every watched chain (system chain ids). */
  private readonly swapChains: string[];
  /** Every chain stream followed: each watched chain's swap stream, and the reputation ones. */
  private readonly streams: Array<readonly [string, Stream]>;
  private readonly resident: WorkingSet | undefined;

  constructor(private readonly o: EngineOptions) {
    this.reputationChains = [...o.chains].filter(([, c]) => c.reputation).map(([id]) => id);
    this.swapChains = [...o.chains.keys()];
    this.streams = [
      ...this.swapChains.map((id) => [id, 'swap'] as const),
      ...this.reputationChains.map((id) => [id, 'reputation'] as const),
    ];
    this.resident = o.resident ? WorkingSet.resident(o.tables) : undefined;
  }

  /**
   * Inputs in order, in one transaction with the position (exactly once: an id handled before, or earlier
   * in the batch, changes nothing). The rows are read and written in a fixed number of statements
   * (working-set.ts); the decisions in between are the same as one input at a time.
   */
  async handleBatch(inputs: readonly ClassifierInput[], context: HandlerContext): Promise<void> {
    if (this.resident) return this.handleResident(inputs);
    const events = inputs.flatMap((i) => (i.kind === 'event' ? [{ id: i.id, event: i.event }] : []));
    const heights = inputs.flatMap((i) => (i.kind === 'height' ? [i.height] : []));
    const committed = await withTransaction(this.o.pool, async (tx) => {
      await this.lock(tx);
      // Read before the ids are recorded: a height's last event counts as handled only once it was.
      const w = await WorkingSet.read(
        tx,
        this.o.tables,
        this.o.group,
        readPlan(events, heights),
        this.reputationChains,
        this.streams,
      );
      const fresh = await recordProcessed(
        tx,
        this.o.group,
        inputs.map((i) => i.id),
      );
      const handled = new Set<string>();
      for (const id of w.releasedMissing) {
        this.o.log.warn(
          { event: id },
          'a dead-lettered chain event was released by the operator: its chain clock passes it',
        );
        this.missingCame(w, id);
      }
      for (const input of inputs) {
        if (!fresh.has(input.id) || handled.has(input.id)) continue;
        handled.add(input.id);
        this.onInput(w, input, handled);
      }
      await w.write(tx);
      this.countOrphansRemoved(w);
      await this.publish(tx, w);
      await saveNewSigners(tx);
      await context.commitIn(tx);
      return w;
    });
    committed.runCommitted();
    this.flushDidRequests();
  }

  /**
   * A replay (`resident` in the options): the state lives in this process across batches, nothing is read
   * back, and each batch writes only its verdicts and violations (the bus commits the position after). The
   * decisions are the same code over the same state as a live transaction's.
   */
  private async handleResident(inputs: readonly ClassifierInput[]): Promise<void> {
    const w = this.resident!;
    const handled = new Set<string>();
    for (const input of inputs) {
      if (w.processed.has(input.id)) continue;
      // Processed once applied: an input that throws is delivered again, and in the end dead-lettered (which
      // holds its chain's clock, as live).
      this.onInput(w, input, handled);
      w.processed.add(input.id);
      handled.add(input.id);
    }
    this.countOrphansRemoved(w);
    await w.writeDecisions(this.o.pool, this.o.resident === 'keep');
    w.runCommitted();
    discardNewSigners();
    this.flushDidRequests();
  }

  /** Resident: writes the rest of the state (swaps, orphans, links, clocks), for a replay that is kept. */
  async writeResident(): Promise<void> {
    if (this.resident && this.o.resident === 'keep')
      await withTransaction(this.o.pool, (tx) => this.resident!.write(tx));
  }

  private onInput(w: WorkingSet, input: ClassifierInput, handledInBatch: ReadonlySet<string>): void {
    if (input.kind === 'event') this.onEvent(w, input.id, input.event);
    else this.onHeight(w, input.height, handledInBatch);
  }

  /**
   * A DID answer arrived: the swaps that waited for it are judged again. Answers arriving while such a judging
   * runs are taken together by the next one (one transaction for a burst, as a false lpSign's candidates
   * answered at once): the promise settles once the judging that took `address` is committed, or failed.
   */
  didAnswered(address: string): Promise<void> {
    this.didAnswers.add(address.toLowerCase());
    if (this.nextDidJudging === undefined) {
      const judging = this.didJudging.then(() => {
        const addresses = [...this.didAnswers];
        this.didAnswers.clear();
        this.nextDidJudging = undefined;
        return this.judgeDidWaiters(addresses);
      });
      this.nextDidJudging = judging;
      this.didJudging = judging.catch(() => undefined);
    }
    return this.nextDidJudging;
  }

  /** The swaps waiting for the DID names of any of `addresses` (lower-case), judged again in one transaction. */
  private async judgeDidWaiters(addresses: readonly string[]): Promise<void> {
    const answered = new Set(addresses);
    const waiting = (wait: Wait) => wait.kind === 'did' && answered.has(wait.address);
    if (this.resident) {
      for (const bid of this.resident.pendingWhere(waiting)) this.evaluate(this.resident, bid);
      await this.resident.writeDecisions(this.o.pool, this.o.resident === 'keep');
      this.resident.runCommitted();
      discardNewSigners();
    } else {
      const committed = await withTransaction(this.o.pool, async (tx) => {
        await this.lock(tx);
        const w = await WorkingSet.readDidWaiters(tx, this.o.tables, addresses);
        for (const bid of w.pendingWhere(waiting)) this.evaluate(w, bid);
        await w.write(tx);
        await this.publish(tx, w);
        // The candidates recovered while judging again (a false lpSign's, asked for in rounds).
        await saveNewSigners(tx);
        return w;
      });
      committed.runCommitted();
    }
    this.flushDidRequests();
  }

  /**
   * The bus is moving a message of ours to the dead-letter topic (SubscribeOptions.onDeadLetter, inside that
   * transaction; a replay also calls it for a malformed message it passes over, without one): a chain event
   * that never applied holds its stream's clock below its block (heldFor) until it is redriven and applied, or
   * released by the operator (npm run classifier-holds). Nothing here may depend on the message's content to
   * succeed: a throw would roll the dead letter back, and its partition would retry it for ever.
   */
  async deadLettered(message: BusMessage, reason: string, tx?: PoolClient): Promise<void> {
    const missing = missingOf(message, this.o.chains);
    const id = missing[0]?.eventId;
    if (id === undefined) return;
    if (this.resident) {
      // As live: a copy of an event applied before, or one the operator released, holds nothing.
      if (this.resident.processed.has(id) || this.o.releasedHolds?.has(id)) return;
      for (const m of missing) this.resident.addMissing(m);
    } else {
      if (tx === undefined)
        throw new Error('deadLettered: a live engine records in the dead letter transaction');
      if (!(await this.recordMissing(tx, missing, reason))) return;
    }
    this.o.log.error(
      {
        event: id,
        chain: missing[0]!.chainId,
        streams: missing.map((m) => m.stream),
        block: missing[0]!.block,
        reason,
      },
      'a chain event was dead-lettered: its chain clock stays below its block until it is redriven and applied (or released: npm run classifier-holds)',
    );
  }

  /** Records the holds of a dead-lettered event; false when it holds nothing (applied, or released before). */
  private async recordMissing(tx: PoolClient, missing: MissingEvent[], reason: string): Promise<boolean> {
    const id = missing[0]!.eventId;
    const { rows } = await tx.query<{ held: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM processed_events WHERE consumer = $1 AND event_id = $2)
           OR EXISTS (SELECT 1 FROM ${this.o.tables.missingEvents} WHERE event_id = $2 AND released) AS held`,
      [this.o.group, id],
    );
    if (rows[0]!.held) return false;
    await tx.query(
      `INSERT INTO ${this.o.tables.missingEvents} (chain_id, stream, event_id, block_number, error)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]) ON CONFLICT DO NOTHING`,
      [
        missing.map((m) => m.chainId),
        missing.map((m) => m.stream),
        missing.map((m) => m.eventId),
        missing.map((m) => m.block),
        missing.map(() => nulAsText(reason).slice(0, 2_000)),
      ],
    );
    return true;
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

  /** A metric update for when `w`'s decisions are committed. */
  private count(w: WorkingSet, update: (metrics: ClassifierMetrics) => void): void {
    const metrics = this.o.metrics;
    if (metrics) w.whenCommitted(() => update(metrics));
  }

  private flushDidRequests(): void {
    for (const address of this.didWanted) this.o.did.request(address);
    this.didWanted.clear();
  }

  /** The orphans removed by their expiry (orphan-retention.ts), counted once the batch is committed. */
  private countOrphansRemoved(w: WorkingSet): void {
    const removed = w.takeOrphansRemoved();
    if (removed > 0) this.count(w, (m) => m.orphansRemoved.inc(removed));
  }

  /** Keeps an event until its swap is known, or until it can no longer be (orphan-retention.ts). */
  private orphan(w: WorkingSet, id: string, ref: string, event: ChainEvent): null {
    return w.addOrphan(id, ref, event, orphanClock(this.swapChains, w.clocks));
  }

  private onEvent(w: WorkingSet, id: string, event: ChainEvent): void {
    const stream = event.kind === 'Complaint' ? 'reputation' : 'swap';
    const clock = w.clocks.get(clockKey(event.chainId, stream));
    const swap = this.route(w, id, event);
    // The clock passed this event's block: it was published late (the Connector's late path). A decided
    // swap's verdict stands without it; said loudly, since that verdict may be wrong.
    if (clock !== undefined && event.blockTimestamp < clock) {
      const decided = swap?.decided === true;
      this.count(w, (m) => m.lateEvents.inc({ chain: event.chainId, swap: decided ? 'decided' : 'open' }));
      this.o.log[decided ? 'warn' : 'info'](
        {
          event: id,
          kind: event.kind,
          chain: event.chainId,
          block: event.blockNumber,
          clock,
          bid: swap?.facts.bidId,
        },
        decided
          ? "event came after its chain's clock passed it; its swap was already decided without it"
          : "event came after its chain's clock passed it",
      );
    }
    if (swap !== null) this.judgeAndSave(w, swap);
    this.missingCame(w, id);
  }

  /**
   * Event `id` was applied, or (a dead-lettered one) released by the operator: heights that waited for it may
   * now move their chain's clock, lowest first, unless something else holds them (heldFor).
   */
  private missingCame(w: WorkingSet, id: string): void {
    if (w.missingArrived(id)) {
      this.o.log.info({ event: id }, 'a dead-lettered chain event came: it holds no clock now');
    }
    const released = w.releaseHeights(id).sort((a, b) => a.height - b.height);
    for (const h of released) {
      const waitFor = this.heldFor(w, h.chainId, h.stream, h.height);
      if (waitFor !== undefined) {
        const { stored: _stored, ...height } = h;
        w.holdHeight({ ...height, lastEventId: waitFor });
      } else this.advanceClock(w, h.chainId, h.stream, h.height, h.blockTime);
    }
  }

  private onHeight(w: WorkingSet, height: ChainHeight, handledInBatch: ReadonlySet<string>): void {
    // A dead-lettered event the operator released counts as handled (live: WorkingSet.read asks for it): it
    // never applies, and the heights naming it as their stream's last event would otherwise wait for ever.
    const ownHandled =
      height.lastEventId === null ||
      w.handled(height.lastEventId, handledInBatch) ||
      (this.resident !== undefined && this.o.releasedHolds?.has(nulAsText(height.lastEventId)) === true);
    // Held for its own last event first: once that one is handled it stays handled, so a height released
    // later only asks heldFor.
    const waitFor = ownHandled
      ? this.heldFor(w, height.chainId, height.stream, height.height)
      : height.lastEventId!;
    if (waitFor === undefined) {
      this.advanceClock(w, height.chainId, height.stream, height.height, height.blockTimestamp);
    } else {
      w.holdHeight({
        chainId: height.chainId,
        stream: height.stream,
        height: height.height,
        blockTime: height.blockTimestamp,
        lastEventId: waitFor,
      });
    }
  }

  /**
   * The event a height of a stream (its own last event handled) must still wait for: the one the stream's
   * lowest held height waits for, or a dead-lettered event of the stream at or below it. The clock says every
   * event up to its height was applied; an event in the middle of a chunk that was dead-lettered did not
   * apply, although the chunk's last one did.
   */
  private heldFor(w: WorkingSet, chainId: string, stream: Stream, height: number): string | undefined {
    return (
      w.heldBelow(chainId, stream, height)?.lastEventId ?? w.missingThrough(chainId, stream, height)?.eventId
    );
  }

  private env(w: WorkingSet, bidId: string): JudgeEnv {
    return new SwapEnv(this.o, this.reputationChains, this.swapChains, w, bidId);
  }

  private advanceClock(
    w: WorkingSet,
    chainId: string,
    stream: Stream,
    height: number,
    blockTime: number,
  ): void {
    const orphansBefore = stream === 'swap' ? orphanClock(this.swapChains, w.clocks) : undefined;
    const now = w.advanceClock(chainId, stream, height, blockTime);
    this.count(w, (m) => m.clock.set({ chain: chainId, stream }, now));
    const due =
      stream === 'swap'
        ? w.dueOnClock(chainId, now)
        : w.dueOnComplaints(complaintsSeenThrough(this.reputationChains, w.clocks) ?? -1);
    for (const bid of due) this.evaluate(w, bid);
    // Orphans that nothing can adopt any more go with the clock move that tells (orphan-retention.ts): the
    // oldest watched chain's clock moved.
    if (stream === 'swap') {
      const orphans = orphanClock(this.swapChains, w.clocks);
      if (orphans !== undefined && (orphansBefore === undefined || orphans > orphansBefore))
        w.removeExpiredOrphans(orphans);
    }
  }

  /**
   * Joins an event to its swap (the caller judges and writes the swap), or keeps it until its swap is known.
   * Returns the swap to judge, or null.
   */
  private route(w: WorkingSet, id: string, event: ChainEvent): Loaded | null {
    switch (event.kind) {
      case 'TransferOut': {
        // Only a TransferOut whose own fields hash to its bid is the bid's swap (anyone can name any bid).
        const executes = executesItsBid(event);
        if (!executes.executes) {
          this.ignoreOut(w, event, 'foreign', `not the swap of its bid: ${executes.reason}`);
          return null;
        }
        // A lock of its agreement, whatever becomes of it here (the swap, or a copy): a complaint quoting the
        // agreement under another of its bids is told apart from case 1 by it (judge.ts).
        const copyKeys = copyKeysOf(event);
        w.recordLock(lockKeysOf(event), copyKeys, {
          bidId: event.bidId,
          chainId: event.chainId,
          transferId: event.transferId,
          blockTime: event.blockTimestamp,
        });
        const existing = w.swap(event.bidId);
        const current = existing?.facts.out;
        if (!current) {
          // The same agreement with the same LP consent (copy key) locked under another of its bids: one swap, the
          // earliest lock, as for two locks of one bid below.
          const other = w.agreementSwap(copyKeys, event.bidId);
          if (other) return this.anotherBidsLock(w, event, other, existing);
        }
        if (current) {
          // The swap's own lock again (a replay keeps only the transfer id of a decided swap's TransferOut).
          if (current.transferId === event.transferId) return null;
          // The same agreement locked twice: the swap is the first lock in chain order. A decided swap's
          // was settled with every earlier lock seen (its source clock passed it), so a later one is a copy.
          if (existing.decided || !displacesOut(existing.facts, event)) {
            this.ignoreOut(w, event, 'copy', `a later lock of the agreement of swap ${current.transferId}`);
            // The LP may have answered this lock instead: its TransferIn and the events naming it join the swap
            // (the judge reads them only to see that the LP answered the agreement; judge.ts, cases 3 and 4).
            w.link([event.transferId], event.bidId, true);
            const { facts: joined, adopted } = this.adopt(w, existing.facts, event.transferId, 'lock');
            return adopted ? { facts: joined, decided: existing.decided } : null;
          }
          this.ignoreOut(w, current, 'copy', `a later lock of the agreement of swap ${event.transferId}`);
          w.link([current.transferId], event.bidId, true);
        }
        const swap: Loaded = existing
          ? { facts: existing.facts, decided: existing.decided }
          : { facts: emptyFacts(event.bidId), decided: false };
        swap.facts = this.adopt(w, addFact(swap.facts, event), event.transferId, 'lock').facts;
        return swap;
      }
      case 'TransferIn': {
        const swap = join(w.swapByOut(event.srcTransferId), event);
        if (swap === null) return this.orphan(w, id, event.srcTransferId, event);
        // Linked even when the facts do not keep it: what names it joins the swap as before.
        w.link([event.transferId], swap.facts.bidId);
        swap.facts = this.adopt(w, swap.facts, event.transferId, 'transfer in').facts;
        return swap;
      }
      case 'ConfirmOut':
      case 'RefundOut':
        return join(w.swapByOut(event.transferId), event) ?? this.orphan(w, id, event.transferId, event);
      case 'ConfirmIn':
      case 'RefundIn': {
        const bid = w.linkedBid(event.transferId);
        if (bid === undefined) return this.orphan(w, id, event.transferId, event);
        const swap = w.swap(bid);
        // Its TransferIn joined before (that linked it): unless that one can be the LP's answer, these never
        // matter (a griefer confirms or refunds its own), and are not kept. The swap is judged all the same.
        if (swap && !confirmsAnAnswer(swap.facts, event)) return { facts: swap.facts, decided: swap.decided };
        return join(swap, event);
      }
      case 'Complaint': {
        const existing = w.swap(event.bidId);
        return {
          facts: addFact(existing?.facts ?? emptyFacts(event.bidId), event),
          decided: existing?.decided ?? false,
        };
      }
    }
  }

  /**
   * `event` locks the agreement (its copy key) of `other`, the swap of another bid: the swap is the earlier lock
   * in chain order, the other a copy, as for two locks of one bid (route). A later lock joins `other` as a copy
   * (linked as a lock: the LP's answer to it joins the swap, judge.ts cases 3 and 4). An earlier one takes the
   * swap over under its own bid: `other`'s lock becomes its copy, its events and links move, and its row keeps
   * only its complaints (judged as a complaint under a bid whose agreement was locked under another: judge.ts),
   * or goes. `other` is still pending then: its verdict waits for the source clock past its lock, so past this
   * one (the same chain: the copy key holds the source chain). `existing`: `event`'s bid's row (its complaints).
   */
  private anotherBidsLock(
    w: WorkingSet,
    event: TransferOut,
    other: StoredSwap,
    existing: StoredSwap | undefined,
  ): Loaded | null {
    const otherOut = other.facts.out!;
    if (other.decided || !displacesOut(other.facts, event)) {
      this.ignoreOut(
        w,
        event,
        'copy',
        `a later lock of the agreement of swap ${otherOut.transferId} (bid ${other.facts.bidId}) under another of its bids`,
      );
      w.link([event.transferId], other.facts.bidId, true);
      const { facts: joined, adopted } = this.adopt(w, other.facts, event.transferId, 'lock');
      return adopted ? { facts: joined, decided: other.decided } : null;
    }
    const bid = event.bidId;
    const moved = other.facts;
    this.ignoreOut(
      w,
      otherOut,
      'copy',
      `a later lock of the agreement of swap ${event.transferId} (bid ${bid}) under another of its bids`,
    );
    let facts = addFact(existing?.facts ?? emptyFacts(bid), event);
    for (const e of [
      ...moved.ins,
      ...moved.confirmOuts,
      ...moved.refundOuts,
      ...moved.confirmIns,
      ...moved.refundIns,
    ])
      facts = addFact(facts, e);
    w.forgetOut(otherOut.transferId);
    w.repointLinks(moved.bidId, bid);
    w.link([otherOut.transferId], bid, true);
    if (moved.complaints.length > 0) {
      this.judgeAndSave(w, {
        facts: { ...emptyFacts(moved.bidId), complaints: moved.complaints },
        decided: false,
      });
    } else w.dropSwap(moved.bidId);
    const swap: Loaded = { facts, decided: existing?.decided ?? false };
    swap.facts = this.adopt(w, swap.facts, event.transferId, 'lock').facts;
    return swap;
  }

  /**
   * A TransferOut that is not the swap of the bid it names: recorded with why, logged and counted, blamed on
   * nobody. Events that name its transfer id join no swap (they stay orphans).
   */
  private ignoreOut(w: WorkingSet, event: TransferOut, reason: IgnoredOut['reason'], detail: string): void {
    w.ignoreOut({ eventId: chainEventId(event), reason, detail, event });
    this.count(w, (m) => m.ignoredOuts.inc({ reason }));
    // A replay meets again what the live run logged (and recorded) already.
    const level = this.resident ? 'debug' : 'warn';
    this.o.log[level](
      {
        bidId: event.bidId,
        chainId: event.chainId,
        transferId: event.transferId,
        txHash: event.txHash,
        reason,
      },
      `TransferOut ignored: ${detail}`,
    );
  }

  /**
   * Events that named a transfer of this swap before it was known join it, transitively (a TransferIn brings
   * its ConfirmIn / RefundIn); every TransferIn that joins is linked for the ones still to come. `ref` is a
   * lock of the agreement (the swap's, or another: a TransferIn, ConfirmOut or RefundOut naming it joins) or
   * a TransferIn (only a ConfirmIn or RefundIn naming it joins: a TransferIn naming a TransferIn answers no
   * lock, as in route). `adopted`: some event joined (the facts may keep none of them).
   */
  private adopt(
    w: WorkingSet,
    facts: SwapFacts,
    ref: string,
    kind: 'lock' | 'transfer in',
  ): { facts: SwapFacts; adopted: boolean } {
    let joined = facts;
    let adopted = false;
    const refs: Array<[string, 'lock' | 'transfer in']> = [[ref, kind]];
    const links: string[] = [];
    while (refs.length > 0) {
      const [named, namedKind] = refs.pop()!;
      for (const event of w.adoptOrphans(named)) {
        const confirmsIn = event.kind === 'ConfirmIn' || event.kind === 'RefundIn';
        // Taken out of the orphans all the same: nothing else can name what it names.
        if (namedKind === 'transfer in' && !confirmsIn) continue;
        adopted = true;
        // After the TransferIn they name (adopted through it), as in route.
        if (confirmsIn && !confirmsAnAnswer(joined, event)) continue;
        joined = addFact(joined, event);
        if (event.kind === 'TransferIn') {
          links.push(event.transferId);
          refs.push([event.transferId, 'transfer in']);
        }
      }
    }
    w.link(links, facts.bidId);
    return { facts: joined, adopted };
  }

  /** Judges a pending swap again (its chain's clock moved, or a DID answer came). */
  private evaluate(w: WorkingSet, bid: string): void {
    const swap = w.swap(bid);
    if (swap && !swap.decided) this.judgeAndSave(w, { facts: swap.facts, decided: false });
  }

  /**
   * Keeps the swap's facts and either what it waits for or its verdict (and violation), to be written and
   * published with the transaction. A decided swap is never judged again (a late event is kept with its facts).
   */
  private judgeAndSave(w: WorkingSet, swap: Loaded): void {
    const { facts } = swap;
    const judgement = swap.decided ? null : judge(facts, this.env(w, facts.bidId));
    const wait = judgement?.status === 'pending' ? judgement.wait : null;
    w.putSwap({
      facts,
      decided: judgement === null || judgement.status === 'decided',
      wait,
      waitingFor: judgement?.status === 'pending' ? judgement.reason : null,
      dirty: true,
    });
    if (wait?.kind === 'did') this.didWanted.add(wait.address);
    if (judgement?.status === 'pending') for (const address of judgement.alsoAsk) this.didWanted.add(address);
    if (judgement?.status !== 'decided') return;
    const verdict = judgement.verdict;
    w.verdicts.push(verdict);
    const violation = violationOf(verdict);
    if (violation) w.violations.push(violation);
    const clock = w.clocks.get(clockKey(verdict.decidedOn, 'swap'));
    this.count(w, (m) => m.decided(verdict, clock));
  }

  /**
   * Live: the transaction's verdicts and violations go out with it, both topics in one step (nothing is
   * published by a replay).
   */
  private async publish(tx: PoolClient, w: WorkingSet): Promise<void> {
    if (!this.o.bus) return;
    const source = 'classifier';
    await publishMany(
      this.o.bus,
      [
        {
          topic: swapVerdicts.name,
          messages: w.verdicts.map((verdict) =>
            encode(
              swapVerdicts,
              envelope(swapVerdicts, verdict, {
                id: verdictId(verdict.bidId),
                occurredAt: verdict.blockTime,
                source,
              }),
            ),
          ),
        },
        {
          topic: violations.name,
          messages: w.violations.map((violation) =>
            encode(
              violations,
              envelope(violations, violation, {
                id: violationId(violation.bidId),
                occurredAt: violation.blockTime,
                source,
              }),
            ),
          ),
        },
      ],
      { tx },
    );
  }
}

/** A swap as read (or created) in this transaction. */
interface Loaded {
  facts: SwapFacts;
  decided: boolean;
}

/** An event joins a known swap (null when none). */
function join(swap: StoredSwap | undefined, event: ChainEvent): Loaded | null {
  return swap ? { facts: addFact(swap.facts, event), decided: swap.decided } : null;
}

/**
 * What judge() may know while judging one swap. A class, not an object of arrow functions: it is made for
 * every judgement, and its methods are not closures made again each time.
 */
class SwapEnv implements JudgeEnv {
  constructor(
    private readonly o: Pick<EngineOptions, 'chains' | 'did'>,
    private readonly reputationChains: readonly string[],
    private readonly watchedChains: readonly string[],
    private readonly w: WorkingSet,
    private readonly bidId: string,
  ) {}

  now(chainId: string): number | undefined {
    return this.w.clocks.get(clockKey(chainId, 'swap'));
  }

  complaintsSeenThrough(): number | undefined {
    return complaintsSeenThrough(this.reputationChains, this.w.clocks);
  }

  agreementLocks(key: string): readonly AgreementLock[] {
    return this.w.agreementLocks(key);
  }

  evmChainId(chainId: string): number | undefined {
    return this.o.chains.get(chainId)?.evmChainId;
  }

  swapChains(): readonly string[] {
    return this.watchedChains;
  }

  didNames(address: string): readonly string[] | undefined {
    return this.o.did.names(address, this.bidId);
  }
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
