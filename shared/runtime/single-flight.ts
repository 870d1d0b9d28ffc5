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
