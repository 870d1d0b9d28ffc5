/**
 * What the Classifier adds to GET /health, and the periodic ask for the DID names pending swaps wait for.
 * Degraded (never unavailable: the classifier still judges every other chain) while a dead-lettered chain event
 * holds a chain's clock, whose swaps wait until it is redriven or released (npm run classifier-holds), or while
 * the DID support has failed every lookup for DID_FAILING_DEGRADED_SECONDS (swaps needing a name wait), or
 * while pending swaps wait for the clock of a chain no longer in `chainClients`.
 */
import type { Queryable } from '../../shared/db/pool.js';
import type { HealthCheck } from '../../shared/runtime/http.js';
import type { ClassifierTables } from './tables.js';

/** A DID support failing this long is an outage, not a blip (lookups are retried with back-off to 30 s). */
export const DID_FAILING_DEGRADED_SECONDS = 120;

export function classifierHealth(
  db: Queryable,
  tables: ClassifierTables,
  did: { failingForSeconds(): number | undefined },
  /** The chains of `chainClients` (system chain ids). */
  watchedChains: readonly string[],
): HealthCheck {
  return async () => {
    const [held, unwatched] = await Promise.all([
      db.query<{ chain_id: string; n: string }>(
        // Released ones stay as tombstones, holding nothing.
        `SELECT chain_id, count(DISTINCT event_id) AS n FROM ${tables.missingEvents} WHERE NOT released
          GROUP BY chain_id ORDER BY chain_id`,
      ),
      // A chain taken out of chainClients moves no clock: the swaps waiting for it would wait for ever. Not
      // decided for the operator (a configuration slip would decide them for good): said here.
      db.query<{ chain_id: string; n: string }>(
        `SELECT wait_chain AS chain_id, count(*) AS n FROM ${tables.swaps}
          WHERE status = 'pending' AND wait_kind = 'clock' AND wait_chain <> ALL($1)
          GROUP BY wait_chain ORDER BY wait_chain`,
        [watchedChains],
      ),
    ]);
    const didFailingSeconds = did.failingForSeconds();
    const degraded =
      held.rows.length > 0 ||
      unwatched.rows.length > 0 ||
      (didFailingSeconds !== undefined && didFailingSeconds >= DID_FAILING_DEGRADED_SECONDS);
    const byChain = (rows: Array<{ chain_id: string; n: string }>) =>
      Object.fromEntries(rows.map((r) => [r.chain_id, Number(r.n)]));
    return {
      status: degraded ? 'degraded' : 'ok',
      // By chain: dead-lettered events holding its clocks.
      deadLetteredEvents: byChain(held.rows),
      ...(unwatched.rows.length === 0 ? {} : { swapsWaitingForUnwatchedChains: byChain(unwatched.rows) }),
      ...(didFailingSeconds === undefined ? {} : { didFailingSeconds }),
    };
  };
}

/**
 * Asks again, every `intervalMs`, for the DID names every pending swap waits for: the requests of an instance
 * that stopped (another of the group decided on its swaps meanwhile) are otherwise asked again only when an
 * instance starts. A request in flight is not doubled (DidNames.request is idempotent).
 */
export function askPendingDidsEvery(
  intervalMs: number,
  ask: () => Promise<void>,
  onError: (err: Error) => void,
): { stop(): void } {
  const timer = setInterval(() => void ask().catch(onError), intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
