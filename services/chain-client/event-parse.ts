import type { LogDescription, ParamType, Result } from 'ethers';

/**
 * `event_parse` as the original chain client produced it (web3-eth-abi `decodeLog`): every argument under its
 * index and its name, `__length__`, numbers as decimal strings, addresses checksummed, bytes32 lower-case,
 * plus the snake_case aliases receivers read (`transfer_id`, `bid_id`, `hash_lock`, …).
 */
export type EventParse = Record<string, unknown>;

/** camelCase argument → the snake_case alias the original added, in the original's order. */
const ALIASES: Record<string, string> = {
  transferId: 'transfer_id',
  dstChainId: 'dst_chain_id',
  bidId: 'bid_id',
  dstAddress: 'dst_address',
  hashlock: 'hash_lock',
  tokenDst: 'dst_token',
  amountDst: 'dst_amount',
  srcChainId: 'src_chain_id',
  srcTransferId: 'src_transfer_id',
  agreementReachedTime: 'agreement_reached_time',
  expectedSingleStepTime: 'expected_single_step_time',
  tolerantSingleStepTime: 'tolerant_single_step_time',
  earliestRefundTime: 'earliest_refund_time',
};
const ALIAS_ORDER = Object.keys(ALIASES);

export function eventParse(log: LogDescription): EventParse {
  const parsed = web3Shape(log.args, log.fragment.inputs);
  for (const name of ALIAS_ORDER) {
    if (name in parsed) parsed[ALIASES[name]!] = parsed[name];
  }
  return parsed;
}

function web3Shape(values: Result, params: readonly ParamType[]): EventParse {
  const out: EventParse = {};
  params.forEach((param, i) => (out[String(i)] = web3Value(values[i], param)));
  out.__length__ = params.length;
  params.forEach((param, i) => {
    if (param.name) out[param.name] = out[String(i)];
  });
  return out;
}

function web3Value(value: unknown, param: ParamType): unknown {
  if (param.baseType === 'tuple') return web3Shape(value as Result, param.components ?? []);
  if (param.baseType === 'array') return (value as Result).map((v) => web3Value(v, param.arrayChildren!));
  if (typeof value === 'bigint') return value.toString(10);
  if (param.type === 'bytes32' || param.type === 'bytes') return String(value).toLowerCase();
  return value; // address (ethers checksums), string, bool
}
