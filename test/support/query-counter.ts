import pg from 'pg';

/**
 * Records every statement sent to database `database` by any pg client of this process (pool.query, a
 * transaction's client.query, BEGIN / COMMIT included) until stop(): the round trips a piece of code costs.
 */
export function countQueries(database: string): { texts: string[]; stop(): void } {
  const texts: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    if (this.database === database) {
      const q = args[0] as string | { text?: string };
      texts.push(typeof q === 'string' ? q : (q.text ?? ''));
    }
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  return {
    texts,
    stop: () => {
      pg.Client.prototype.query = original;
    },
  };
}
