/**
 * The behalf command bodies (spec §2.2, otmoic.md §2) parsed at the boundary into the relay.commands
 * payload: addresses checksummed and left-padded, amounts as decimal strings, times as unix seconds.
 * Key names: `command_transfer_confirm` is primary; the original clients' `command_transfer_out_confirm` /
 * `command_transfer_in_confirm` are aliases; refunds use `command_transfer_refund`.
 */
import { z } from 'zod';
import { hashlock, isChainInputError, toEvmAddress, transferId } from '../../shared/chain/index.js';
import type { RelayCommand } from '../../topics/relay.commands.js';
import { commandIdOf } from './command-id.js';
import { RelayError } from './errors.js';
import { parseGasPrice } from './gas-price.js';

export type RelayAction = RelayCommand['action'];
export const RELAY_ACTIONS: readonly RelayAction[] = ['confirm_out', 'confirm_in', 'refund_out', 'refund_in'];

/** Body keys that may hold the command, per action, primary first. */
export const COMMAND_KEYS: Record<RelayAction, readonly string[]> = {
  confirm_out: ['command_transfer_confirm', 'command_transfer_out_confirm'],
  confirm_in: ['command_transfer_confirm', 'command_transfer_in_confirm'],
  refund_out: ['command_transfer_refund'],
  refund_in: ['command_transfer_refund'],
};

/**
 * The original chain client (V2 ApiForRelay.ts, forwardToTransactionManager) sends LOCAL_PADDING, CHAIN_PADDING
 * and FASTEST to its transaction manager's queues. Here the relay manages its wallet's nonce itself, so all three
 * are one and the same command, stored as LOCAL_PADDING (the command id hashes it: a repeat under another type is
 * that command, never a second transaction). The fee comes from `gas.gas_price` alone.
 */
export const SUPPORTED_TRANSACTION_TYPES = ['LOCAL_PADDING', 'CHAIN_PADDING', 'FASTEST'] as const;
const STORED_TRANSACTION_TYPE = 'LOCAL_PADDING';

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const DECIMAL = /^[0-9]{1,78}$/;

/** A 20-byte address given as 0x-hex (up to 20 bytes, left-padded) or as a decimal uint256 string. */
const evmAddress = z
  .string()
  .max(100)
  .transform((value, ctx) => {
    try {
      return toEvmAddress(value);
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message: isChainInputError(error) ? error.message : 'is not an address',
      });
      return z.NEVER;
    }
  });

/** uint256 amount: a decimal string (or a JSON integer up to 2^53-1), kept as a canonical decimal string. */
const amount = z.union([z.string(), z.number()]).transform((value, ctx) => {
  const text =
    typeof value === 'number' ? (Number.isSafeInteger(value) && value >= 0 ? String(value) : '') : value;
  if (!DECIMAL.test(text) || BigInt(text) >> 256n !== 0n) {
    ctx.addIssue({ code: 'custom', message: 'must be a decimal integer string below 2^256' });
    return z.NEVER;
  }
  return BigInt(text).toString();
});

/** Unix seconds or a duration in seconds: a JSON integer or a decimal string, at most 2^53-1. */
const seconds = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const big =
    typeof value === 'number'
      ? Number.isSafeInteger(value)
        ? BigInt(value)
        : -1n
      : /^[0-9]{1,16}$/.test(value)
        ? BigInt(value)
        : -1n;
  if (big < 0n || big > MAX_SAFE) {
    ctx.addIssue({ code: 'custom', message: 'must be whole seconds: an integer from 0 to 2^53-1' });
    return z.NEVER;
  }
  return Number(big);
});

const bytes32 = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'must be 32 bytes of 0x-prefixed hex')
  .transform((s) => s.toLowerCase());
/**
 * An optional member that may also be sent as JSON null, meaning absent: Java clients (Jackson, which Spring's
 * RestTemplate uses) write unset fields as null unless told otherwise.
 */
const optional = <T extends z.ZodType>(schema: T) =>
  schema.nullish().transform((value) => value ?? undefined);
const identifier = optional(z.string().max(200));

const commonFields = {
  user_receiver_address: evmAddress,
  token: evmAddress,
  token_amount: amount,
  eth_amount: amount,
  hash_lock: bytes32,
  agreement_reached_time: seconds,
  expected_single_step_time: seconds,
  tolerant_single_step_time: seconds,
  earliest_refund_time: seconds,
  // Carried for the operator (stored, shown by GET …/commands/{id}); they do not change the transaction.
  uuid: identifier,
  transfer_id: identifier,
  bid: identifier,
  append_information: optional(z.string().max(4_096)),
};

const senderFields = {
  sender: optional(evmAddress),
  sender_wallet_name: optional(z.string().min(1).max(200)),
};

const confirmCommand = z.object({ ...commonFields, ...senderFields, preimage: bytes32 });
const refundCommand = z.object({ ...commonFields, ...senderFields });

export interface CommandContext {
  systemChainId: string;
  /** EVM chain id: part of the transferId. */
  chainId: number;
  /** The swap contract: part of the command id (command-id.ts). */
  contractAddr: string;
  senderWallets: Readonly<Record<string, string>>;
  maxGasPriceWei?: bigint;
}

export interface ParsedCommand {
  command: RelayCommand;
  /** What the client sent besides the call (uuid, transfer_id, bid, append_information, sender_wallet_name). */
  metadata: Record<string, string>;
}

/** Parses a behalf body; throws RelayError (400) naming what is wrong. Never touches the database. */
export function parseCommandBody(
  action: RelayAction,
  body: unknown,
  context: CommandContext,
  /** The sender read from the chain (LogNewTransferIn of the body's transfer_id) for an unknown wallet name. */
  chainSender?: string,
): ParsedCommand {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new RelayError('INVALID_BODY', 'the body must be a JSON object');
  }
  const record = body as Record<string, unknown>;
  const outer = { transaction_type: record['transaction_type'], gas: record['gas'] };

  if (outer.transaction_type === undefined)
    throw new RelayError('INVALID_BODY', 'transaction_type is required');
  if (!SUPPORTED_TRANSACTION_TYPES.includes(outer.transaction_type as never)) {
    throw new RelayError(
      'UNSUPPORTED_TRANSACTION_TYPE',
      `transaction_type must be one of ${SUPPORTED_TRANSACTION_TYPES.join(', ')} (all sent alike: the relay manages its nonce)`,
    );
  }
  const gasPriceInput =
    outer.gas !== null && typeof outer.gas === 'object'
      ? (outer.gas as Record<string, unknown>)['gas_price']
      : undefined;
  if (gasPriceInput === undefined) throw new RelayError('INVALID_BODY', 'gas.gas_price is required');
  const gasPrice = parseGasPrice(gasPriceInput, context.maxGasPriceWei);

  const present = COMMAND_KEYS[action].filter((key) => record[key] !== undefined);
  if (present.length === 0) {
    throw new RelayError(
      'INVALID_BODY',
      `${COMMAND_KEYS[action].join(' (or ')}${COMMAND_KEYS[action].length > 1 ? ')' : ''} is required`,
    );
  }
  if (present.length > 1)
    throw new RelayError('INVALID_BODY', `give the command once, not as both ${present.join(' and ')}`);
  const key = present[0]!;

  const isConfirm = action === 'confirm_out' || action === 'confirm_in';
  const parsed = (isConfirm ? confirmCommand : refundCommand).safeParse(record[key]);
  if (!parsed.success) {
    const details = parsed.error.issues.map((issue) =>
      issue.path.length === 0
        ? `${key}: ${issue.message}`
        : `${key}.${issue.path.map(String).join('.')} ${issue.message}`,
    );
    throw new RelayError('INVALID_BODY', details.join('; '));
  }
  const fields = parsed.data as z.output<typeof confirmCommand> | z.output<typeof refundCommand>;
  const preimage = 'preimage' in fields ? fields.preimage : undefined;
  if (preimage !== undefined && hashlock(preimage) !== fields.hash_lock) {
    throw new RelayError(
      'INVALID_BODY',
      `${key}.preimage does not hash to hash_lock (keccak256 of the 32 preimage bytes)`,
    );
  }

  const sender = resolveSender(
    key,
    fields.sender,
    fields.sender_wallet_name,
    context.senderWallets,
    chainSender,
  );
  const isOut = action === 'confirm_out' || action === 'refund_out';
  const call: RelayCommand['call'] = {
    sender,
    receiver: fields.user_receiver_address,
    token: fields.token,
    tokenAmount: fields.token_amount,
    ethAmount: fields.eth_amount,
    hashlock: fields.hash_lock,
    expectedSingleStepTime: fields.expected_single_step_time,
    tolerantSingleStepTime: fields.tolerant_single_step_time,
    earliestRefundTime: fields.earliest_refund_time,
    agreementReachedTime: fields.agreement_reached_time,
    ...(preimage !== undefined ? { preimage } : {}),
  };
  const computed = transferId({ ...call, isOut, chainId: context.chainId });
  if (fields.transfer_id !== undefined && fields.transfer_id.toLowerCase() !== computed) {
    throw new RelayError(
      'TRANSFER_ID_MISMATCH',
      `${key}.transfer_id is not the transferId of these terms (${computed})`,
    );
  }
  const withoutId = {
    action,
    systemChainId: context.systemChainId,
    transactionType: STORED_TRANSACTION_TYPE,
    gasPrice,
    transferId: computed,
    call,
  };
  const metadata: Record<string, string> = {};
  for (const name of ['uuid', 'transfer_id', 'bid', 'append_information', 'sender_wallet_name'] as const) {
    const value = fields[name];
    if (value !== undefined) metadata[name] = value;
  }
  return { command: { commandId: commandIdOf(withoutId, context), ...withoutId }, metadata };
}

/**
 * confirm_in / refund_in name the LP's wallet by `sender_wallet_name` (the original chain client held the
 * LP's wallets); here the name is looked up in `relay.senderWallets`, else the sender of the body's
 * transfer_id is read from the chain (its LogNewTransferIn, by the route). An explicit `sender` address is
 * the sender, as the original relay took it: real clients (the chain client's command type, the LP node) send
 * both, with a name only their own chain client knew, so a name this relay does not know is then no refusal.
 * A name it does know must name the same address.
 */
function resolveSender(
  key: string,
  sender: string | undefined,
  walletName: string | undefined,
  wallets: Readonly<Record<string, string>>,
  chainSender?: string,
): string {
  let fromName: string | undefined;
  if (walletName !== undefined) {
    const address = Object.hasOwn(wallets, walletName) ? wallets[walletName] : chainSender;
    if (address !== undefined) fromName = toEvmAddress(address);
    else if (sender === undefined) {
      throw new RelayError(
        'UNKNOWN_SENDER_WALLET',
        `${key}.sender_wallet_name is not a wallet this relay knows (relay.senderWallets)`,
      );
    }
  }
  if (sender !== undefined && fromName !== undefined && sender !== fromName) {
    throw new RelayError(
      'INVALID_BODY',
      `${key}.sender and ${key}.sender_wallet_name name different addresses`,
    );
  }
  const resolved = sender ?? fromName;
  if (resolved === undefined)
    throw new RelayError('INVALID_BODY', `${key}.sender (or sender_wallet_name) is required`);
  return resolved;
}
