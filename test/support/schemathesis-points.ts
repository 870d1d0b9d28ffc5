/**
 * `test/support/schemathesis.sh` runs this: Points on a fresh database holding a few verdicts and violations,
 * with its KYC and DID services unreachable (the stale paths), then schemathesis against its served OpenAPI
 * document (schemathesis-target.ts).
 */
import { pointsMigrations } from '../../services/points/migrations.js';
import {
  hex32,
  pointTestConfig,
  startTestPoints,
  userAddress,
  verdictPayload,
  violationPayload,
} from '../../services/points/test-harness.js';
import { encode, envelope } from '../../topics/envelope.js';
import { swapVerdicts, verdictId } from '../../topics/swap.verdicts.js';
import { violationId, violations } from '../../topics/violations.js';
import { runSchemathesis } from './schemathesis-target.js';

await runSchemathesis({
  name: 'points',
  migrations: [pointsMigrations],
  async serve({ pool, url }, cleanups) {
    const points = await startTestPoints({ pool, url }, pointTestConfig());
    cleanups.push(() => points.close());
    // A few decided swaps, so the answers have records, statistics and a ranking to show.
    const now = Math.floor(Date.now() / 1000) - 3_600;
    const bids = [1, 2, 3, 4, 5].map((n) => hex32(n));
    await points.bus.publish(
      swapVerdicts.name,
      bids.map((bid, i) => {
        const v = verdictPayload({
          bid,
          lpId: 'lp-1',
          user: userAddress(i + 1),
          outcome: i < 3 ? 'normal' : 'violation',
          party: i < 3 ? null : i === 3 ? 'lp' : 'user',
          case: i < 3 ? null : i === 3 ? 3 : 5,
          blockTime: now + i,
        });
        return encode(
          swapVerdicts,
          envelope(swapVerdicts, v, { occurredAt: now + i, source: 'st', id: verdictId(bid) }),
        );
      }),
    );
    await points.bus.publish(
      violations.name,
      [3, 4].map((i) => {
        const v = violationPayload({
          bid: bids[i]!,
          party: i === 3 ? 'lp' : 'user',
          subject: i === 3 ? 'lp-1' : userAddress(i + 1),
          blockTime: now + i,
        });
        return encode(
          violations,
          envelope(violations, v, { occurredAt: now + i, source: 'st', id: violationId(bids[i]!) }),
        );
      }),
    );
    return { base: points.base, openapiPath: '/openapi.json' };
  },
});
