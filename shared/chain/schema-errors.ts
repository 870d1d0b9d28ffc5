/** Turns a zod validation failure into one ChainInputError naming every bad field. */
import type { z } from 'zod';
import { ChainInputError, type ChainInputErrorCode } from './errors.js';

export function parseOrThrow<Schema extends z.ZodType>(
  schema: Schema,
  input: unknown,
  code: ChainInputErrorCode,
  label: string,
): z.output<Schema> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const details = result.error.issues.map((issue) =>
    issue.path.length === 0
      ? `${label}: ${issue.message}`
      : `${label}.${issue.path.map(String).join('.')} ${issue.message}`,
  );
  throw new ChainInputError(code, details.join('; '), { cause: result.error });
}
