/**
 * Errors the services raise on purpose carry a stable string `code` (as ethers v6 and fastify do), so callers
 * and tests match on codes, not on message text.
 */
export class CodedError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CodedError';
  }
}

export function isCodedError(err: unknown, code?: string): err is CodedError {
  return err instanceof CodedError && (code === undefined || err.code === code);
}
