// Persistence of an in-process Hardhat chain, which keeps its state in memory only: every call that produced
// blocks is appended to a journal (JSON lines) with the timestamp of the first block it mined, and the next
// start replays the journal from the same genesis with those timestamps pinned. Hardhat is deterministic, so
// the replayed chain has the same blocks, hashes, state and clock as the one that stopped.
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/** The calls that mine blocks on our devnet (automine: one block per transaction). */
const BLOCK_PRODUCERS = new Set([
  'eth_sendRawTransaction',
  'eth_sendTransaction',
  'evm_mine',
  'hardhat_mine',
]);

const header = z.object({ chainId: z.number().int(), genesis: z.number().int() });
const entry = z.object({ m: z.string(), p: z.array(z.unknown()), t: z.number().int() });
type Entry = z.infer<typeof entry>;

export type Request = (args: { method: string; params?: unknown[] }) => Promise<unknown>;

export interface ChainJournal {
  /** Genesis timestamp of the journalled chain (new journal: the one given). */
  genesis: number;
  /** Calls recorded so far (0: a new chain). */
  entries: number;
  /** Re-runs every recorded call on a fresh chain started at `genesis`. */
  replay(request: Request): Promise<void>;
  /** `request` with every block-producing call recorded (one at a time, so blocks map to calls). */
  wrap(request: Request): Request;
}

export function openJournal(file: string, chainId: number, genesis: number): ChainJournal {
  mkdirSync(path.dirname(file), { recursive: true });
  let recorded: Entry[] = [];
  if (existsSync(file)) {
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    const head = header.parse(JSON.parse(lines[0]!));
    if (head.chainId !== chainId) throw new Error(`devnet journal ${file} is of chain ${head.chainId}`);
    genesis = head.genesis;
    // A line cut short by a crash is the last one: everything before it is whole.
    for (const line of lines.slice(1)) {
      try {
        recorded.push(entry.parse(JSON.parse(line)));
      } catch {
        break;
      }
    }
  } else {
    appendFileSync(file, JSON.stringify({ chainId, genesis }) + '\n');
  }

  const blockNumber = async (request: Request) =>
    Number(BigInt((await request({ method: 'eth_blockNumber' })) as string));
  const timestampOf = async (request: Request, n: number) => {
    const block = (await request({
      method: 'eth_getBlockByNumber',
      params: [`0x${n.toString(16)}`, false],
    })) as {
      timestamp: string;
    };
    return Number(BigInt(block.timestamp));
  };

  return {
    genesis,
    entries: recorded.length,
    async replay(request) {
      for (const { m, p, t } of recorded) {
        await request({ method: 'evm_setNextBlockTimestamp', params: [t] });
        // Reverted transactions were mined (and threw) the first time too.
        await request({ method: m, params: p }).catch(() => undefined);
      }
      recorded = [];
    },
    wrap(request) {
      let queue: Promise<unknown> = Promise.resolve();
      return (args) => {
        if (!BLOCK_PRODUCERS.has(args.method)) return request(args);
        const run = queue.then(async () => {
          const before = await blockNumber(request);
          const outcome = await request(args).then(
            (value) => ({ ok: true as const, value }),
            (error: unknown) => ({ ok: false as const, error }),
          );
          if ((await blockNumber(request)) > before) {
            const t = await timestampOf(request, before + 1);
            appendFileSync(file, JSON.stringify({ m: args.method, p: args.params ?? [], t }) + '\n');
          }
          if (!outcome.ok) throw outcome.error;
          return outcome.value;
        });
        queue = run.catch(() => undefined);
        return run;
      };
    },
  };
}
