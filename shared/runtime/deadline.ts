/**
 * `work`'s outcome, or the error `timeout()` makes once `ms` passed. The work is not cancelled: it goes on
 * unheard, and its later failure is not an unhandled rejection.
 */
export async function withDeadline<T>(work: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  work.catch(() => undefined);
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(timeout()), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The signal of an outbound call: it ends after `timeoutMs`, or when `stop` (ServiceContext.stopSignal) is
 * aborted, so a stop does not wait for a call that would only time out later.
 */
export function outboundSignal(timeoutMs: number, stop?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs);
  return stop ? AbortSignal.any([timeout, stop]) : timeout;
}
