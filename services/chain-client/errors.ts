/**
 * The codes our chain client answers on its support routes, `{code, message}` (DESIGN §5). 30209 is the
 * original chain client's one code for every refusal, kept for its clients (the Connector and the relay take
 * its "already registered" as success); the others are ours, in the relay's 30xxx family (services/relay/errors.ts
 * leaves these numbers out). The README's chain client error table lists them.
 */
export const CHAIN_CLIENT_ERRORS = {
  SUPPORT_REFUSED: {
    code: 30209,
    /** HTTP 200 for "already registered" / "not registered", as the original; otherwise as the refusal says. */
    statuses: [200, 400, 429, 503],
    meaning:
      "the original's code for every support-route refusal: already registered, not registered (HTTP 200), invalid input (400), the instance's limits (429), the RPC unreadable (503)",
  },
  NO_REPUTATION_CONTRACT: {
    code: 30231,
    statuses: [400],
    meaning:
      'register_reputation / history_reputation on an instance without chainClient.reputationContractAddr: it reads no complaint logs, so its heights would claim no complaint happened',
  },
} as const;

/** The original's reply code for every support-route refusal (CHAIN_CLIENT_ERRORS.SUPPORT_REFUSED). */
export const SUPPORT_ERROR = CHAIN_CLIENT_ERRORS.SUPPORT_REFUSED.code;

/** The refusal of a reputation route by an instance that has no reputation contract. */
export const noReputationContract = (systemChainId: string) => ({
  code: CHAIN_CLIENT_ERRORS.NO_REPUTATION_CONTRACT.code,
  message: `this chain client (chain ${systemChainId}) has no reputation contract configured (chainClient.reputationContractAddr): it reads no complaint logs, so it takes no register_reputation or history_reputation`,
});
