/**
 * The recovered-signer memo (consent.ts) in PostgreSQL: a live classifier saves what it recovered with each
 * batch's transaction; a replay loads it all first, and recovers only what was never seen. Saving is best
 * effort by design: an entry lost with a crash is recovered again.
 */
import type { Queryable } from '../../shared/db/pool.js';
import { rememberSigners, signerMemoBound, takeNewSigners } from './consent.js';

export const SIGNER_MEMO = 'classifier_signers';

/** Saves the signers recovered since the last save (one statement; nothing when there are none). */
export async function saveNewSigners(db: Queryable): Promise<void> {
  const entries = takeNewSigners();
  if (entries.length === 0) return;
  await db.query(
    `INSERT INTO ${SIGNER_MEMO} (key, signer) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING`,
    [entries.map(([key]) => key), entries.map(([, signer]) => signer)],
  );
}

/**
 * Loads the saved signers into the memo, no more of them than it holds (the rows of a larger memo would take
 * the memory its bound keeps free): how many were saved, and how many it holds.
 */
export async function loadSigners(db: Queryable): Promise<{ saved: number; kept: number }> {
  const bound = signerMemoBound();
  const { rows } = await db.query<{ key: string; signer: string | null }>(
    `SELECT key, signer FROM ${SIGNER_MEMO} LIMIT $1`,
    [bound],
  );
  const kept = rememberSigners(entriesOf(rows));
  if (rows.length < bound) return { saved: rows.length, kept };
  const { rows: counted } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${SIGNER_MEMO}`);
  return { saved: Number(counted[0]!.n), kept };
}

function* entriesOf(rows: ReadonlyArray<{ key: string; signer: string | null }>) {
  for (const { key, signer } of rows) yield [key, signer] as [string, string | null];
}

/** Drops what was recovered since the last call without saving it (a replay saves nothing). */
export function discardNewSigners(): void {
  takeNewSigners();
}
