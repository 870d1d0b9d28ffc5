import { createHash } from 'node:crypto';
import type { Queryable } from './pool.js';

/**
 * Builds one SQL statement out of data-modifying CTEs contributed by several modules (heights, archive, the
 * postgres log), so a unit of work that touches all of them is one round trip and, without a caller's
 * transaction, atomic by itself with no BEGIN / COMMIT. Each contributor takes placeholders from param()
 * and names its CTEs through name(), so parts never clash.
 */
export class Statement {
  private readonly params: unknown[] = [];
  private readonly ctes: string[] = [];
  private readonly outputs: string[] = [];
  private readonly names = new Map<string, number>();

  /** A placeholder for `value`, cast to `type` when given (`$3::text[]`). */
  param(value: unknown, type?: string): string {
    this.params.push(value);
    return `$${this.params.length}${type ? `::${type}` : ''}`;
  }

  /** A CTE name unique within this statement. */
  name(prefix: string): string {
    const n = (this.names.get(prefix) ?? 0) + 1;
    this.names.set(prefix, n);
    return n === 1 ? prefix : `${prefix}_${n}`;
  }

  /** Adds `name AS (sql)`. Data-modifying CTEs run to completion whether or not anything reads them. */
  with(name: string, sql: string, materialized = false): void {
    this.ctes.push(`${name} AS ${materialized ? 'MATERIALIZED ' : ''}(${sql})`);
  }

  /**
   * Adds a column to the final SELECT: `expression AS alias`. Side effects that are not data-modifying
   * (pg_notify) belong here, since only the final SELECT is sure to be evaluated.
   */
  output(alias: string, expression: string): void {
    this.outputs.push(`${expression} AS ${alias}`);
  }

  /**
   * The statement's transaction (its own, or the caller's it runs in) commits without waiting for its WAL to
   * reach disk: `synchronous_commit` off for that transaction alone, set in the final SELECT, which runs
   * before the commit reads the setting. A server crash within about three `wal_writer_delay`s (600 ms by
   * default) may then lose the transaction whole, never a part of it, and only if no later synchronous commit
   * (any transaction that saw its rows, for one) flushed it. Only for writes whose loss the caller recovers.
   */
  commitWithoutFlush(): void {
    this.output('commit_without_flush', `set_config('synchronous_commit', 'off', true)`);
  }

  get text(): string {
    const select = `SELECT ${this.outputs.length > 0 ? this.outputs.join(', ') : '1 AS done'}`;
    return this.ctes.length > 0 ? `WITH ${this.ctes.join(',\n')}\n${select}` : select;
  }

  get values(): unknown[] {
    return [...this.params];
  }

  /**
   * Runs as a named prepared statement: each connection parses and analyses a shape of statement once, later
   * runs send only the values. The name is derived from the text, so different shapes never share one.
   */
  async run<R extends Record<string, unknown>>(client: Queryable): Promise<R> {
    const text = this.text;
    const name = `s_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
    const { rows } = await client.query({ name, text, values: this.params });
    return rows[0] as R;
  }
}
