import { AbiCoder, getBytes, LogDescription, Result, type Interface, type ParamType } from 'ethers';

/**
 * How a contract event's `string` is read when its bytes are not UTF-8: each ill-formed sequence as U+FFFD
 * (WHATWG's decoder), a BOM kept. The contracts take any bytes for a `string` parameter (the ABI decoder
 * checks no UTF-8), so anyone can emit such an event (a 1-wei transferOut; a complaint of any DID owner).
 * Refused, the event was lost, and with it the chain's stream: the chain client failed every step on its
 * range, and the Connector refused every chunk and every read of its block. The event happened; its text is
 * only shown as well as it can be (a signature over those bytes does not recover from it, as over any other
 * text than the signed one).
 */
export const lenientUtf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** A decoded value that is valid throughout: no deferred error of ethers (a string that is not UTF-8). */
function readable(args: Result): boolean {
  try {
    args.toArray(true);
    return true;
  } catch {
    return false;
  }
}

/** `param`'s type with every `string` read as `bytes` (the same encoding), names kept. */
const asBytes = (param: ParamType): string => param.format('full').replace(/\bstring\b/g, 'bytes');

/** `value` decoded as `asBytes(param)`, with each string member turned back into text (lenientUtf8). */
function asText(value: unknown, param: ParamType): unknown {
  if (param.type === 'string') return lenientUtf8.decode(getBytes(value as string));
  if (param.isTuple()) {
    const items = param.components.map((c, i) => asText((value as Result)[i], c));
    return Result.fromItems(
      items,
      param.components.map((c) => c.name || null),
    );
  }
  return value;
}

/**
 * `iface.parseLog(log)`, except that a `string` argument whose bytes are not UTF-8 is read with lenientUtf8
 * instead of failing when it is read (ethers defers that error to the first access of the value).
 */
export function parseLogLenient(
  iface: Interface,
  log: { topics: readonly string[]; data: string },
): LogDescription | null {
  const description = iface.parseLog(log);
  if (description === null || readable(description.args)) return description;
  const { fragment } = description;
  const raw = AbiCoder.defaultAbiCoder().decode(fragment.inputs.map(asBytes), log.data, true);
  const args = Result.fromItems(
    fragment.inputs.map((p, i) => asText(raw[i], p)),
    fragment.inputs.map((p) => p.name || null),
  );
  return new LogDescription(fragment, fragment.topicHash, args);
}
