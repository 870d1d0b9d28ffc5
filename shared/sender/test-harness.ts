/** Test support for the sender's job tables. Not used in production. */
import { OPEN_STATUSES, type SenderJob, type SenderStore } from './types.js';

/** An owner's job table with only the sender's columns (as the relay's and the Agent's have them), keyed by `job`. */
export const TEST_JOBS_TABLE = `
  CREATE TABLE test_jobs (
    job text PRIMARY KEY,
    status text NOT NULL,
    nonce bigint, raw_tx text, tx_hash text, txs jsonb NOT NULL DEFAULT '[]',
    reason text, attempts integer NOT NULL DEFAULT 0, refusals integer NOT NULL DEFAULT 0,
    mined_block bigint, cancel_reason text, block_number bigint, paid_failures integer NOT NULL DEFAULT 0,
    failures integer NOT NULL DEFAULT 0, updated_at timestamptz NOT NULL DEFAULT now()
  )`;

/**
 * A SenderStore over `jobs` in memory, as the relay's and the Agent's tables behave: a job is signed once, at the
 * wallet's next nonce (from `firstNonce`, by default the one after those the jobs hold); a replacement only while
 * its attempts are the ones known. `notes`: what the sender noted, in order.
 */
export function memoryStore(
  jobs: SenderJob[],
  options: { firstNonce?: number } = {},
): {
  store: SenderStore;
  notes: Array<{ id: string; problem: string; refused: boolean }>;
} {
  const notes: Array<{ id: string; problem: string; refused: boolean }> = [];
  const find = (id: string) => jobs.find((j) => j.id === id)!;
  let nextNonce = options.firstNonce ?? Math.max(-1, ...jobs.map((j) => j.nonce ?? -1)) + 1;
  const store: SenderStore = {
    open: async () =>
      jobs.filter((j) => OPEN_STATUSES.includes(j.status)).map((j) => ({ ...j, attempts: [...j.attempts] })),
    async signFirst(id, _wallet, sign) {
      const job = find(id);
      if (job.status !== 'scheduled') return undefined;
      const nonce = nextNonce++;
      const attempt = await sign(nonce);
      Object.assign(job, { status: 'signed', nonce, attempts: [attempt] });
      return { nonce, attempt };
    },
    async addAttempt(id, known, attempt, reason) {
      const job = find(id);
      if (job.attempts.length !== known) return false;
      job.attempts.push(attempt);
      if (attempt.kind === 'cancel')
        Object.assign(job, { status: 'cancelling', cancelReason: reason ?? null });
      return true;
    },
    async markSent(id) {
      const job = find(id);
      if (job.status === 'signed') job.status = 'sent';
    },
    async note(id, problem, refused = false) {
      notes.push({ id, problem, refused });
      if (refused) find(id).refusals += 1;
    },
    async setMinedBlock(id, block) {
      find(id).minedBlock = block;
    },
    async finish(id, outcome) {
      Object.assign(find(id), {
        status: outcome.status,
        reason: 'reason' in outcome ? outcome.reason : null,
      });
    },
  };
  return { store, notes };
}
