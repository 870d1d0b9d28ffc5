/**
 * The swap agreement and the three shapes it travels in (DESIGN §7: "the mapping of event fields to message
 * members is one documented module"):
 *
 * - the OtmoicSwap EIP-712 `Message` the user and the LP sign (spec/otmoic.md §2; the golden vectors sign
 *   `src_chain_id` / `dst_chain_id` as Otmoic system chain ids and addresses as checksummed hex),
 * - the fields of a `LogNewTransferOut` (the user's lock; destination address and token are uint256),
 * - the reputation contract's `Complaint` struct (addresses as uint256, tokens as strings), whose §5 bidId
 *   the LP node also passes to `transferOut`.
 *
 * | Message member            | TransferOut field              | Complaint member        |
 * | ------------------------- | ------------------------------ | ----------------------- |
 * | src_chain_id              | the event's chain (system id)  | srcChainId              |
 * | src_address               | sender (alias: receiver)       | srcAddress (uint256)    |
 * | src_token                 | token                          | srcToken                |
 * | src_amount                | amount                         | srcAmount               |
 * | dst_chain_id              | dstChainId                     | dstChainId              |
 * | dst_address               | dstAddress (uint256)           | dstAddress (uint256)    |
 * | dst_token                 | tokenDst (uint256)             | dstToken                |
 * | dst_amount                | amountDst                      | dstAmount               |
 * | dst_native_amount         | nativeAmountDst                | dstNativeAmount         |
 * | requestor, lp_id          | requestor, lpId                | requestor, lpId         |
 * | the four times            | the four times                 | the four times          |
 * | (signatures, not signed)  | userSign, lpSign               | userSign, lpSign        |
 *
 * A signature is over exact strings, and the event only carries numbers: an address member is rendered
 * checksummed (as the golden vectors sign it) or lower-case, each member on its own (ADDRESS_RENDERINGS): the
 * strings come from the LP's bridge configuration and the user's input as their authors wrote them, and a real
 * bridge of the original LP node has its src_token checksummed and its dst_token lower-case. A signature that
 * recovers the expected signer under any rendering proves consent to the same terms.
 *
 * The bidId a TransferOut carries is a free argument of `transferOut`: the contract does not check it. A
 * TransferOut executes the bid it names only when its own fields, mapped as above to the Complaint form,
 * hash to that bidId under the spec §5 rule (`transferOutBid`); the token members (strings in the Complaint)
 * are tried checksummed and lower-case, each on its own, as the signatures are.
 *
 * `src_address` has two forms. Ours (spec §2.1, "source-chain address of the user") is the TransferOut's
 * sender, as in the table. The real SDK signs `quote_base.lp_bridge_address`, the LP's receiving address on
 * the source chain, i.e. the TransferOut's **receiver**, and fills the complaint's `srcAddress` with it.
 * spec/otmoic.md: the specification wins and the original form is accepted as an alias. So an agreement read
 * from a TransferOut carries its receiver as `srcAddressAlias`, and wherever it is rebuilt or compared (its bid,
 * the signatures, a complaint's terms) the alias is tried after the sender (`MessageVersion`, `differingTerms`).
 */
import { createHash } from 'node:crypto';
import { getAddress } from 'ethers';
import { bidId } from '../chain/bid-id.js';
import { parseSignature } from '../chain/signature.js';
import type { Complaint } from '../chain/complaint-eip712.js';
import type { SwapAgreement } from '../chain/otmoic-swap-eip712.js';
import { uint256ToAddress } from '../chain/conversions.js';

/** The terms, canonical: addresses checksummed, numbers as bigint or decimal strings. */
export interface Agreement {
  srcChainId: bigint;
  srcAddress: string;
  /**
   * The original form of `src_address` accepted as an alias (see the module's note): the TransferOut's receiver,
   * when read from a TransferOut and not the sender itself. Absent from a complaint's or a Message's agreement.
   */
  srcAddressAlias?: string;
  srcToken: string;
  srcAmount: string;
  dstChainId: bigint;
  dstAddress: string;
  dstToken: string;
  dstAmount: string;
  dstNativeAmount: string;
  requestor: string;
  lpId: string;
  agreementReachedTime: bigint;
  expectedSingleStepTime: bigint;
  tolerantSingleStepTime: bigint;
  earliestRefundTime: bigint;
}

export interface SignedAgreement extends Agreement {
  userSign: string;
  lpSign: string;
}

/** What a TransferOut event carries of the agreement (topics/chain.events.ts TransferOut). */
export interface TransferOutTerms {
  chainId: string;
  sender: string;
  receiver: string;
  token: string;
  amount: string;
  dstChainId: string;
  dstAddress: string;
  tokenDst: string;
  amountDst: string;
  nativeAmountDst: string;
  requestor: string;
  lpId: string;
  agreementReachedTime: string;
  expectedSingleStepTime: string;
  tolerantSingleStepTime: string;
  earliestRefundTime: string;
  userSign: string;
  lpSign: string;
}

/** Thrown when a field cannot be read as its member (e.g. a uint256 address ≥ 2^160). */
export class AgreementFieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

function addressField(field: string, value: string): string {
  const known = checksummed.get(value);
  if (known !== undefined) return known;
  let address: string;
  try {
    address = /^\d+$/.test(value) ? uint256ToAddress(value) : getAddress(value.toLowerCase());
  } catch {
    throw new AgreementFieldError(field, `not an address: ${JSON.stringify(value.slice(0, 80))}`);
  }
  // Checksumming hashes the address: the same few parties' addresses come back in every agreement.
  if (checksummed.size >= 100_000) checksummed.clear();
  checksummed.set(value, address);
  return address;
}

const checksummed = new Map<string, string>();

function uintField(field: string, value: string): bigint {
  if (!/^\d{1,78}$/.test(value)) throw new AgreementFieldError(field, 'not a decimal integer');
  return BigInt(value);
}

/** The agreement a TransferOut claims to execute (its own fields), its receiver as the `src_address` alias. */
export function agreementOfTransferOut(out: TransferOutTerms): SignedAgreement {
  const srcAddress = addressField('sender', out.sender);
  // Only an alias: a receiver that is no address leaves the agreement in its sender form, whole.
  let alias: string | undefined;
  try {
    alias = addressField('receiver', out.receiver);
  } catch (err) {
    if (!(err instanceof AgreementFieldError)) throw err;
  }
  return {
    srcChainId: uintField('chainId', out.chainId),
    srcAddress,
    ...(alias !== undefined && alias !== srcAddress ? { srcAddressAlias: alias } : {}),
    srcToken: addressField('token', out.token),
    srcAmount: out.amount,
    dstChainId: uintField('dstChainId', out.dstChainId),
    dstAddress: addressField('dstAddress', out.dstAddress),
    dstToken: addressField('tokenDst', out.tokenDst),
    dstAmount: out.amountDst,
    dstNativeAmount: out.nativeAmountDst,
    requestor: out.requestor,
    lpId: out.lpId,
    agreementReachedTime: uintField('agreementReachedTime', out.agreementReachedTime),
    expectedSingleStepTime: uintField('expectedSingleStepTime', out.expectedSingleStepTime),
    tolerantSingleStepTime: uintField('tolerantSingleStepTime', out.tolerantSingleStepTime),
    earliestRefundTime: uintField('earliestRefundTime', out.earliestRefundTime),
    userSign: out.userSign,
    lpSign: out.lpSign,
  };
}

/** Token members of a complaint are free strings; an address-looking one is read as that address. */
function tokenField(field: string, value: string): string {
  return /^0x[0-9a-fA-F]{40}$/.test(value) || /^\d+$/.test(value) ? addressField(field, value) : value;
}

const COMPLAINT_MEMBERS = [
  'srcChainId',
  'srcAddress',
  'srcToken',
  'dstChainId',
  'dstAddress',
  'dstToken',
  'srcAmount',
  'dstAmount',
  'dstNativeAmount',
  'requestor',
  'lpId',
  'expectedSingleStepTime',
  'tolerantSingleStepTime',
  'earliestRefundTime',
  'agreementReachedTime',
  'userSign',
  'lpSign',
] as const;

/** The agreement a complaint carries (its struct as emitted, numbers as decimal strings). */
export function agreementOfComplaint(fields: Readonly<Record<string, string>>): SignedAgreement {
  const missing = COMPLAINT_MEMBERS.filter((m) => typeof fields[m] !== 'string');
  if (missing.length > 0) throw new AgreementFieldError(missing[0]!, 'missing from the complaint');
  const f = fields as Record<(typeof COMPLAINT_MEMBERS)[number], string>;
  return {
    srcChainId: uintField('srcChainId', f.srcChainId),
    srcAddress: addressField('srcAddress', f.srcAddress),
    srcToken: tokenField('srcToken', f.srcToken),
    srcAmount: f.srcAmount,
    dstChainId: uintField('dstChainId', f.dstChainId),
    dstAddress: addressField('dstAddress', f.dstAddress),
    dstToken: tokenField('dstToken', f.dstToken),
    dstAmount: f.dstAmount,
    dstNativeAmount: f.dstNativeAmount,
    requestor: f.requestor,
    lpId: f.lpId,
    agreementReachedTime: uintField('agreementReachedTime', f.agreementReachedTime),
    expectedSingleStepTime: uintField('expectedSingleStepTime', f.expectedSingleStepTime),
    tolerantSingleStepTime: uintField('tolerantSingleStepTime', f.tolerantSingleStepTime),
    earliestRefundTime: uintField('earliestRefundTime', f.earliestRefundTime),
    userSign: f.userSign,
    lpSign: f.lpSign,
  };
}

export type Casing = 'checksum' | 'lower';
/** How each address member is written: the casing of each one is its author's (see the module's note). */
export interface AddressRendering {
  srcAddress: Casing;
  srcToken: Casing;
  dstAddress: Casing;
  dstToken: Casing;
}
export const uniform = (c: Casing): AddressRendering => ({
  srcAddress: c,
  srcToken: c,
  dstAddress: c,
  dstToken: c,
});
/** Every rendering, all checksummed first, then all lower-case (the common cases), then the mixed ones. */
export const ADDRESS_RENDERINGS: readonly AddressRendering[] = [
  uniform('checksum'),
  uniform('lower'),
  ...(['checksum', 'lower'] as const)
    .flatMap((srcAddress) =>
      (['checksum', 'lower'] as const).flatMap((srcToken) =>
        (['checksum', 'lower'] as const).flatMap((dstAddress) =>
          (['checksum', 'lower'] as const).map((dstToken) => ({
            srcAddress,
            srcToken,
            dstAddress,
            dstToken,
          })),
        ),
      ),
    )
    .filter((r) => new Set(Object.values(r)).size > 1),
];

/** The renderings of the token members alone (the only address members the bid writes as strings). */
const TOKEN_RENDERINGS = ADDRESS_RENDERINGS.filter(
  (r) => r.srcAddress === 'checksum' && r.dstAddress === 'checksum',
);

/** Which form of `src_address` a Message is written with: the agreement's own (first), or its alias. */
export type SrcAddressForm = 'own' | 'alias';
/** One Message the parties may have signed for an agreement: its address members' casing, and src_address's form. */
export interface MessageVersion {
  rendering: AddressRendering;
  srcAddress: SrcAddressForm;
}
const OWN_VERSIONS: readonly MessageVersion[] = ADDRESS_RENDERINGS.map((rendering) => ({
  rendering,
  srcAddress: 'own',
}));
/** Each rendering with the own form first and then the alias: the common renderings of both come early. */
const ALIASED_VERSIONS: readonly MessageVersion[] = ADDRESS_RENDERINGS.flatMap((rendering) => [
  { rendering, srcAddress: 'own' as const },
  { rendering, srcAddress: 'alias' as const },
]);
/** Whether a member reads differently checksummed and in lower case (has letters: most addresses do). */
const hasCasing = (value: string) => /^0x[0-9a-fA-F]{40}$/.test(value) && value !== value.toLowerCase();
/** The distinct versions for each pattern of members with a casing (messageVersions), made when first needed. */
const versionsByPattern = new Map<string, readonly MessageVersion[]>();
/**
 * The distinct Messages to try for an agreement's signatures, in order: every rendering (ADDRESS_RENDERINGS),
 * and, when it has a `src_address` alias, each rendering again with the alias right after the own form; a
 * version that writes the same Message as an earlier one is left out (a member without letters, such as the
 * native token's zero address, reads the same in either casing). At most twice ADDRESS_RENDERINGS.length (32);
 * as many as before for an agreement without an alias (a complaint's).
 */
export function messageVersions(a: Agreement): readonly MessageVersion[] {
  const aliased = a.srcAddressAlias !== undefined;
  const casing = {
    own: hasCasing(a.srcAddress),
    alias: aliased && hasCasing(a.srcAddressAlias!),
    srcToken: hasCasing(a.srcToken),
    dstAddress: hasCasing(a.dstAddress),
    dstToken: hasCasing(a.dstToken),
  };
  const pattern = `${aliased}${Object.values(casing).join()}`;
  let versions = versionsByPattern.get(pattern);
  if (versions === undefined) {
    // A version's Message, up to the values: each member's casing where it has one, and the src_address form.
    const shape = ({ rendering: r, srcAddress }: MessageVersion) =>
      [
        srcAddress,
        casing[srcAddress] ? r.srcAddress : '-',
        casing.srcToken ? r.srcToken : '-',
        casing.dstAddress ? r.dstAddress : '-',
        casing.dstToken ? r.dstToken : '-',
      ].join();
    const seen = new Set<string>();
    versions = (aliased ? ALIASED_VERSIONS : OWN_VERSIONS).filter((version) => {
      const key = shape(version);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    versionsByPattern.set(pattern, versions);
  }
  return versions;
}

const srcAddressOf = (a: Agreement, form: SrcAddressForm): string =>
  form === 'alias' && a.srcAddressAlias !== undefined ? a.srcAddressAlias : a.srcAddress;

const written = (address: string, casing: Casing) =>
  casing === 'checksum' ? address : address.toLowerCase();
/** A token member is a free string: only an address-looking one has a casing. */
const writtenToken = (value: string, casing: Casing) =>
  /^0x[0-9a-fA-F]{40}$/.test(value) ? written(value, casing) : value;

/** The `src_address` string of a Message of the agreement: the given form of it, in the given casing. */
export const writtenSrcAddress = (a: Agreement, casing: Casing, form: SrcAddressForm): string =>
  written(srcAddressOf(a, form), casing);

/** The OtmoicSwap `Message` of an agreement, address members in the given rendering, src_address in the given form. */
export function swapMessage(
  a: Agreement,
  rendering: AddressRendering = uniform('checksum'),
  srcAddressForm: SrcAddressForm = 'own',
): SwapAgreement {
  return {
    src_chain_id: a.srcChainId,
    src_address: writtenSrcAddress(a, rendering.srcAddress, srcAddressForm),
    src_token: writtenToken(a.srcToken, rendering.srcToken),
    src_amount: a.srcAmount,
    dst_chain_id: a.dstChainId,
    dst_address: written(a.dstAddress, rendering.dstAddress),
    dst_token: writtenToken(a.dstToken, rendering.dstToken),
    dst_amount: a.dstAmount,
    dst_native_amount: a.dstNativeAmount,
    requestor: a.requestor,
    lp_id: a.lpId,
    agreement_reached_time: a.agreementReachedTime,
    expected_single_step_time: a.expectedSingleStepTime,
    tolerant_single_step_time: a.tolerantSingleStepTime,
    earliest_refund_time: a.earliestRefundTime,
  };
}

/**
 * The Complaint struct of a signed agreement, as the SDK sends it and the contract hashes it for the bidId
 * (uint256 addresses as decimal strings, tokens as the checksummed strings the parties signed).
 */
export function complaintOfAgreement(a: SignedAgreement): Record<(typeof COMPLAINT_MEMBERS)[number], string> {
  return {
    srcChainId: a.srcChainId.toString(),
    srcAddress: BigInt(a.srcAddress).toString(),
    srcToken: a.srcToken,
    dstChainId: a.dstChainId.toString(),
    dstAddress: BigInt(a.dstAddress).toString(),
    dstToken: a.dstToken,
    srcAmount: a.srcAmount,
    dstAmount: a.dstAmount,
    dstNativeAmount: a.dstNativeAmount,
    requestor: a.requestor,
    lpId: a.lpId,
    expectedSingleStepTime: a.expectedSingleStepTime.toString(),
    tolerantSingleStepTime: a.tolerantSingleStepTime.toString(),
    earliestRefundTime: a.earliestRefundTime.toString(),
    agreementReachedTime: a.agreementReachedTime.toString(),
    userSign: a.userSign,
    lpSign: a.lpSign,
  };
}

const COMPARED: ReadonlyArray<[keyof Agreement, string]> = [
  ['srcChainId', 'source chain'],
  ['srcAddress', 'source address'],
  ['srcToken', 'source token'],
  ['srcAmount', 'source amount'],
  ['dstChainId', 'destination chain'],
  ['dstAddress', 'destination address'],
  ['dstToken', 'destination token'],
  ['dstAmount', 'destination amount'],
  ['dstNativeAmount', 'destination native amount'],
  ['requestor', 'requestor'],
  ['lpId', 'lpId'],
  ['agreementReachedTime', 'agreement time'],
  ['expectedSingleStepTime', 'expected step time'],
  ['tolerantSingleStepTime', 'tolerant step time'],
  ['earliestRefundTime', 'earliest refund time'],
];

/**
 * The terms in which two agreements differ, in words (addresses compared case-insensitively). A source address
 * equal to the other's `src_address` alias (a TransferOut's receiver) is no difference.
 */
export function differingTerms(a: Agreement, b: Agreement): string[] {
  const same = (x: unknown, y: unknown) =>
    typeof x === 'string' && typeof y === 'string' ? x.toLowerCase() === y.toLowerCase() : x === y;
  // One side's own address against the other's own or alias (two aliases alone are not the same source).
  const sameSrc =
    same(a.srcAddress, b.srcAddress) ||
    same(a.srcAddress, b.srcAddressAlias) ||
    same(a.srcAddressAlias, b.srcAddress);
  const alias = (x: Agreement) => (x.srcAddressAlias === undefined ? '' : ` (or ${x.srcAddressAlias})`);
  return COMPARED.filter(([key]) => (key === 'srcAddress' ? !sameSrc : !same(a[key], b[key]))).map(
    ([key, words]) =>
      key === 'srcAddress'
        ? `${words} ${a.srcAddress}${alias(a)} ≠ ${b.srcAddress}${alias(b)}`
        : `${words} ${String(a[key])} ≠ ${String(b[key])}`,
  );
}

/** The Complaint struct of a signed agreement, token members in the given rendering (the bidId's preimage). */
function complaintStruct(
  a: SignedAgreement,
  rendering: AddressRendering,
  srcAddressForm: SrcAddressForm,
): Complaint {
  return {
    srcChainId: a.srcChainId,
    srcAddress: BigInt(srcAddressOf(a, srcAddressForm)),
    srcToken: writtenToken(a.srcToken, rendering.srcToken),
    dstChainId: a.dstChainId,
    dstAddress: BigInt(a.dstAddress),
    dstToken: writtenToken(a.dstToken, rendering.dstToken),
    srcAmount: a.srcAmount,
    dstAmount: a.dstAmount,
    dstNativeAmount: a.dstNativeAmount,
    requestor: a.requestor,
    lpId: a.lpId,
    expectedSingleStepTime: a.expectedSingleStepTime,
    tolerantSingleStepTime: a.tolerantSingleStepTime,
    earliestRefundTime: a.earliestRefundTime,
    agreementReachedTime: a.agreementReachedTime,
    userSign: a.userSign,
    lpSign: a.lpSign,
  };
}

/**
 * The §5 bidId of a signed agreement, token members in the given rendering (checksummed by default), srcAddress
 * in the given form (its own by default).
 */
export function bidIdOfAgreement(
  a: SignedAgreement,
  rendering: AddressRendering = uniform('checksum'),
  srcAddressForm: SrcAddressForm = 'own',
): string {
  return bidId(complaintStruct(a, rendering, srcAddressForm));
}

/**
 * Whether a TransferOut executes the bid it names: its own fields, read as the agreement they claim
 * (agreementOfTransferOut), hash to its bidId under some rendering of its token members, srcAddress its sender
 * or (the alias) its receiver. Anyone can call `transferOut`
 * with any bidId (from a throwaway address, for 1 wei, on any chain), so only such a TransferOut is the
 * bid's swap. `reason` says why not, in words.
 */
export function transferOutBid(
  out: TransferOutTerms & { bidId: string },
): { executes: true } | { executes: false; reason: string } {
  const found = transferOutBidForm(out);
  return found.executes ? { executes: true } : found;
}

/**
 * transferOutBid, with what the classifier goes on to use when it executes: the agreement its fields claim and
 * the form of src_address its bid hashes in ('alias': the SDK's receiver form, which leaves the sender out).
 */
export function transferOutBidForm(
  out: TransferOutTerms & { bidId: string },
):
  { executes: true; agreement: SignedAgreement; form: SrcAddressForm } | { executes: false; reason: string } {
  let agreement: SignedAgreement;
  try {
    agreement = agreementOfTransferOut(out);
  } catch (err) {
    if (!(err instanceof AgreementFieldError)) throw err;
    return {
      executes: false,
      reason: `its ${err.message} (no EVM address: a non-EVM chain's?), so its bid cannot be checked against its fields`,
    };
  }
  const claimed = out.bidId.toLowerCase();
  const computed: string[] = [];
  // The bid writes only the token members as strings (its addresses are numbers): one rendering per pair, the
  // sender form first, then the receiver (at most 8 hashes).
  const forms: SrcAddressForm[] = agreement.srcAddressAlias === undefined ? ['own'] : ['own', 'alias'];
  for (const form of forms) {
    for (const rendering of TOKEN_RENDERINGS) {
      const id = bidIdOfAgreement(agreement, rendering, form);
      if (id === claimed) return { executes: true, agreement, form };
      if (!computed.includes(id)) computed.push(id);
    }
  }
  return { executes: false, reason: `its own fields hash to ${computed.join(' / ')}, not to its bid` };
}

/** An address member as the key writes it: the base-10 number of the address (its casing is no part of it). */
const keyAddress = (address: string) => BigInt(address).toString();
/** A token member: an address as its number; a token that is no address (a free string) as it is. */
const keyToken = (value: string) => (/^0x[0-9a-fA-F]{40}$/.test(value) ? keyAddress(value) : value);

/**
 * The agreement's key: one agreement whatever its spelling. The bid hashes free strings (the token members as
 * typed, srcAddress in either form, the signatures as text), and the classifier reads all of those spellings as
 * one agreement, so one signed agreement has many valid bids. The key is what the signatures bind, read as the
 * classifier reads them (consent.ts tries every address member in both casings, and src_address as the sender
 * and as the receiver alias): chain ids and times in base 10, every address member as its number, amounts,
 * requestor and lpId as their exact strings (signed as such). Two agreements have one key exactly when consent.ts
 * accepts the same signatures for both; then differingTerms finds no difference.
 *
 * No signature is part of it: the LP can always sign its part again (a fresh nonce, or another casing of the
 * Message), and the parties are in the terms (requestor, lpId), whose consent the judge proves.
 *
 * SHA-256 (hex) of the members, each written as its UTF-8 byte length, ':', and itself (unambiguous: no member
 * can be shifted across a border, as the bid's can). tables.ts agreementLocksBackfillDdl computes the same in SQL.
 */
export function agreementKey(a: Agreement, srcAddressForm: SrcAddressForm = 'own'): string {
  const members = [
    a.srcChainId.toString(),
    keyAddress(srcAddressOf(a, srcAddressForm)),
    keyToken(a.srcToken),
    a.srcAmount,
    a.dstChainId.toString(),
    keyAddress(a.dstAddress),
    keyToken(a.dstToken),
    a.dstAmount,
    a.dstNativeAmount,
    a.requestor,
    a.lpId,
    a.agreementReachedTime.toString(),
    a.expectedSingleStepTime.toString(),
    a.tolerantSingleStepTime.toString(),
    a.earliestRefundTime.toString(),
  ];
  return hashOfMembers(members);
}

/**
 * The keys of an agreement in each form of src_address it has (a TransferOut's: its sender, then its receiver
 * when that is another address; a complaint's: its own).
 */
export function agreementKeys(a: Agreement): string[] {
  return a.srcAddressAlias === undefined
    ? [agreementKey(a)]
    : [agreementKey(a, 'own'), agreementKey(a, 'alias')];
}

/** secp256k1's group order: s and n − s are the same signature (with the other y parity). */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/**
 * One signature whatever its encoding, as parseSignature reads it (what consent.ts recovers with): r, s folded to
 * low-s, and the y parity, in lower-case hex. The encodings it folds: hex casing, 65 bytes with v 27/28 or 0/1,
 * EIP-2098 compact, high-s (s and n − s with the other parity recover the same signer). A string that does not
 * parse stays itself (`raw:` and the string): it proves nobody's consent, and only the very same string equals it.
 */
export function canonicalSignature(signature: string): string {
  let parsed: ReturnType<typeof parseSignature>;
  try {
    parsed = parseSignature(signature);
  } catch {
    return `raw:${signature}`;
  }
  const hex = Buffer.from(parsed.compact).toString('hex');
  const r = hex.slice(0, 64);
  let s = BigInt('0x' + hex.slice(64));
  let parity: number = parsed.recoveryId;
  if (s > SECP256K1_N / 2n) {
    s = SECP256K1_N - s;
    parity ^= 1;
  }
  return `${r}${s.toString(16).padStart(64, '0')}${parity}`;
}

/**
 * The copy keys of a lock (a TransferOut that executes its bid), one per key of its agreement (agreementKeys, same
 * order): two locks that share one are the same agreement with the same LP consent locked twice, whatever their
 * bids' spellings, and the later is a copy of the earlier's swap (the classifier's engine, route). What they bind
 * is what the bid binds, less its spellings:
 * - `lpSign` (canonicalSignature), or anyone could lock the user's terms first with a garbage lpSign from a
 *   throwaway (case 2 there) and make the user's genuine lock a copy of it, sparing the LP case 3; not `userSign`,
 *   or the user could sign again (a fresh nonce) and have the LP blamed for a lock its node never saw;
 * - the lock's sender, with the receiver (`by sender`: its agreement keys in both forms), as a bid in the sender
 *   form binds it: only the user's wallet makes such a copy. Without the sender, an LP whose agreement was signed
 *   in the sender form (spec §2.1) could lock the same terms with the same signatures from a throwaway before the
 *   user: the receiver form of that lock has the user's lock's agreement key and lpSign, but the lpSign consents
 *   to neither form of the throwaway's lock (case 2 there), and the user's lock, a copy, would spare the LP case 3;
 * - or, for a lock whose bid hashes in the receiver form (`aliasBid`: the SDK's, which leaves the sender out, so
 *   that anyone can already make a copy under the very bid), that form's key alone, shared by any sender's lock of
 *   that form: a second wallet of the user's in the SDK's form is one agreement too.
 * The first key (the sender form's row) is `by sender`; the second (the receiver form's) is the receiver form's
 * own key when `aliasBid`, else `by sender` again. Length-prefixed members, SHA-256 in hex, as agreementKey.
 */
export function copyKeysOfLock(
  a: Agreement,
  lpSign: string,
  aliasBid: boolean,
  keys: readonly string[] = agreementKeys(a),
): string[] {
  const signature = canonicalSignature(lpSign);
  const bySender = hashOfMembers(['sender', ...keys, signature]);
  if (keys.length === 1) return [bySender];
  return [bySender, aliasBid ? hashOfMembers(['receiver', keys[1]!, signature]) : bySender];
}

/** SHA-256 (hex) of the members, each written as its UTF-8 byte length, ':', and itself (the keys' form). */
function hashOfMembers(members: readonly string[]): string {
  return createHash('sha256')
    .update(members.map((m) => `${Buffer.byteLength(m, 'utf8')}:${m}`).join(''), 'utf8')
    .digest('hex');
}
