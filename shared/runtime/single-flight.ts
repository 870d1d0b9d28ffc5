/**
 * `work` wrapped so that calls while one runs share it (one in flight; the next call after it settled runs it
 * again): the gauges of one scrape reading the same rows, a pass that must not overlap itself.
 */
export function singleFlight<T>(work: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  return () =>
    (running ??= work().finally(() => {
      running = undefined;
    }));
}

/**
 * `work` whose result is reused for `ttlMs` after it resolved (a failure is not kept), with one call in
 * flight at a time: a chain read that many requests ask for and that changes rarely.
 */
export function cachedFor<T>(
  ttlMs: number,
  work: () => Promise<T>,
  now = () => Date.now(),
): () => Promise<T> {
  let kept: { value: T; at: number } | undefined;
  const fetch = singleFlight(async () => {
    const value = await work();
    kept = { value, at: now() };
    return value;
  });
  return async () => (kept !== undefined && now() - kept.at < ttlMs ? kept.value : fetch());
}
