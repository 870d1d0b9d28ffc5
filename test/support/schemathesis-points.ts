/**
 * `test/support/schemathesis.sh` runs this: Points on a fresh database holding a few verdicts and violations,
 * with its KYC service unreachable (the stale path) and a fake DID support service that knows two names, then
 * schemathesis against its served OpenAPI document (schemathesis-target.ts). The DID service must answer: with
 * it down, `did=` of a name never resolved is a documented 503, which schemathesis counts as a server error
 * whenever it happens to generate a well-formed name (external-services.test.ts covers that 503).
 */
import { pointsMigrations } from '../../services/points/migrations.js';
import {
  hex32,
  pointTestConfig,
  startFakeDidSupport,
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
    const did = await startFakeDidSupport(
      new Map([
        [userAddress(1), ['alice.example']],
        [userAddress(4), ['dave.example', 'dave@example']],
      ]),
    );
    cleanups.push(() => did.close());
    // A generous lookup timeout: a slow answer under fuzzing load must not read as the service being down.
    const points = await startTestPoints(
      { pool, url },
      pointTestConfig({ didSupportUrl: did.url, lookupTimeoutMs: 5_000 }),
    );
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
    return {
      base: points.base,
      openapiPath: '/openapi.json',
      known: {
        'query.bid': bids,
        'query.lp_id': ['lp-1'],
        'query.address': [1, 4, 5].map(userAddress),
        'query.did': ['alice.example', 'dave@example', 'nobody.example'],
      },
    };
  },
});
