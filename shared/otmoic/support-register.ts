/**
 * The chain client's `POST /support/register` (spec/otmoic.md §4), as the Connector and the relay call it:
 * `{callback: {on_…: url}, merge}` → `{code: 200}`; a repeat answers 30209 "callbackUrl is already registered",
 * which the original meant as harmless and counts as success here.
 */
import { z } from 'zod';
import { outboundSignal } from '../runtime/deadline.js';

const reply = z.looseObject({ code: z.number(), message: z.string().optional() });
/**
 * Longest callback URL the chain client takes: a registration's callback is a key of a unique index (a btree
 * row holds 2,704 bytes), and a longer one failed the insert (500). Room for a path or query token of any size
 * a receiver uses. The relay's register_relay takes what the chain client takes.
 */
export const MAX_CALLBACK_URL_LENGTH = 1_000;

/** Whether a callback URL holds `user:password@`: fetch refuses to post to it, so the chain client refuses it. */
export const holdsCredentials = (url: URL): boolean => url.username !== '' || url.password !== '';

/** The original's answer to a registration (or history request) it holds already. */
export const ALREADY_REGISTERED = /already registered/i;

/**
 * POSTs JSON to a support route and parses its `{code, message}` answer (10 s at most). Its errors never
 * quote `url`: a configured chain-client URL may carry a token in its query, and callers pass these errors on
 * (the relay answers register_relay with one). A caller that logs which chain client failed names its origin.
 * `stop` (ServiceContext.stopSignal) ends it sooner when the process stops.
 */
export async function postSupport(
  url: string,
  body: unknown,
  stop?: AbortSignal,
): Promise<z.infer<typeof reply>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: outboundSignal(10_000, stop),
  });
  const parsed = reply.safeParse(await response.json().catch(() => undefined));
  if (!parsed.success) throw new Error(`HTTP ${response.status} without a {code} body`);
  return parsed.data;
}

/** A chain client's refusal of a support request: its `{code, message}` answer. */
export class SupportRefusedError extends Error {
  constructor(
    readonly what: string,
    readonly code: number,
    readonly answer: string,
  ) {
    super(`${what} refused: ${code} ${answer}`);
    this.name = 'SupportRefusedError';
  }
}

/** Registers `callback`; throws SupportRefusedError with the chain client's code and message when it refuses. */
export async function registerCallbacks(
  url: string,
  callback: Readonly<Record<string, string>>,
  merge: boolean,
  stop?: AbortSignal,
): Promise<'registered' | 'already registered'> {
  const result = await postSupport(url, { callback, merge }, stop);
  if (result.code === 200) return 'registered';
  if (ALREADY_REGISTERED.test(result.message ?? '')) return 'already registered';
  throw new SupportRefusedError('register', result.code, result.message ?? '');
}

/**
 * Ours: our chain client's `POST /support/unregister` (the original has none and answers 404, which counts
 * as "not registered" here: it forgets registrations on restart anyway).
 */
export async function unregisterCallbacks(
  url: string,
  callback: Readonly<Record<string, string>>,
  merge: boolean,
  stop?: AbortSignal,
): Promise<'unregistered' | 'not registered'> {
  const result = await postSupport(url, { callback, merge }, stop).catch((error: Error) => {
    if (/^HTTP 404 /.test(error.message)) return { code: 404, message: 'no such route' };
    throw error;
  });
  if (result.code === 200) return 'unregistered';
  if (result.code === 404 || /not registered/i.test(result.message ?? '')) return 'not registered';
  throw new Error(`unregister refused: ${result.code} ${result.message ?? ''}`);
}
