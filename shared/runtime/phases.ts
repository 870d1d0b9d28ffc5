/**
 * Where a long run's time went: `mark(name)` ends the phase called `name` (it began at the previous mark or
 * at creation). `seconds` lists the phases in order, rounded to milliseconds, for a report.
 */
export class PhaseClock {
  private last = performance.now();
  private readonly spent: Array<[string, number]> = [];

  mark(name: string): void {
    const now = performance.now();
    this.spent.push([name, now - this.last]);
    this.last = now;
  }

  get seconds(): Record<string, number> {
    return Object.fromEntries(this.spent.map(([name, ms]) => [name, Math.round(ms) / 1_000]));
  }
}
