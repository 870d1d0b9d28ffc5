/**
 * "Sleep until there is work": a loop calls `reset()` before looking for work and `sleep(ms)` when it found
 * none; a `wake()` that came in between is not lost (the sleep returns at once). The timeout is a safety net
 * for a missed wake-up, not the way work is found.
 */
export class WakeSignal {
  private pending = false;
  private resolveSleep: (() => void) | undefined;

  wake(): void {
    this.pending = true;
    this.resolveSleep?.();
  }

  reset(): void {
    this.pending = false;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.pending || signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.resolveSleep = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.resolveSleep = done;
    });
  }
}
