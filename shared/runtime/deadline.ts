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
