/** One problem in the configuration: the key it concerns and what is wrong with it. Never holds a value. */
export interface ConfigIssue {
  key: string;
  problem: string;
}

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(
    readonly source: string,
    readonly issues: ConfigIssue[],
  ) {
    super(`invalid configuration (${source}):\n` + issues.map((i) => `  ${i.key}: ${i.problem}`).join('\n'));
    this.name = 'ConfigError';
  }

  /** One line per problem, as printed before the process exits. */
  lines(): string[] {
    return this.issues.map((i) => `config error: ${i.key}: ${i.problem} (${this.source})`);
  }
}
