/**
 * An error's text for a log line or a message. A host with two addresses (localhost on most systems: ::1 and
 * 127.0.0.1) fails to connect with an AggregateError whose message is empty: its attempts' messages say what
 * failed. Failing those, the error's code or class name, never an empty string.
 */
export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.message !== '') return error.message;
  const inner = error instanceof AggregateError ? error.errors.map(errorText).filter((t) => t !== '') : [];
  if (inner.length > 0) return inner.join('; ');
  const { code } = error as { code?: unknown };
  return typeof code === 'string' ? code : error.name;
}
