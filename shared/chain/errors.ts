/**
 * Typed errors of the chain-crypto library.
 *
 * Modelled on ethers v6's coded errors: callers branch on `code`, never on the message text.
 * The HTTP layer maps every ChainInputError to a 400 JSON body; the original chain client
 * answered some of these cases with HTTP 500 plain text or `{"code":200,"address":"0x0"}`.
 */

export type ChainInputErrorCode =
  | 'INVALID_PREIMAGE'
  | 'INVALID_HASHLOCK'
  | 'INVALID_SIGNATURE'
  | 'INVALID_ADDRESS'
  | 'INVALID_CHAIN_ID'
  | 'INVALID_AGREEMENT'
  | 'INVALID_COMPLAINT'
  | 'INVALID_NUMBER';

export class ChainInputError extends Error {
  override readonly name = 'ChainInputError';
  readonly code: ChainInputErrorCode;

  constructor(code: ChainInputErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

export function isChainInputError(error: unknown, code?: ChainInputErrorCode): error is ChainInputError {
  return error instanceof ChainInputError && (code === undefined || error.code === code);
}
