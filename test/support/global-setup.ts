// Placeholder replaced by the foundation work (embedded PostgreSQL for the run).
export default async function setup(): Promise<void> {}
