import { Interface } from 'ethers';

// The Otmoic contract interfaces as real clients see them (spec/otmoic.md §3, §5): functions, events
// (nothing indexed) and custom errors. Our Solidity in contracts/ implements exactly these; a test checks
// the compiled ABI against these fragments.

const TIMES = 'uint64 _expectedSingleStepTime, uint64 _tolerantSingleStepTime, uint64 _earliestRefundTime';
const CONFIRM_PARAMS = `address _sender, address _receiver, address _token, uint256 _token_amount, uint256 _eth_amount, bytes32 _hashlock, ${TIMES}, bytes32 _preimage, uint64 _agreementReachedTime`;
const REFUND_PARAMS = `address _sender, address _receiver, address _token, uint256 _token_amount, uint256 _eth_amount, bytes32 _hashlock, ${TIMES}, uint64 _agreementReachedTime`;

export const OTMOIC_SWAP_ABI = [
  `function transferOut(address _sender, address _receiver, address _token, uint256 _amount, bytes32 _hashlock, ${TIMES}, uint64 _dstChainId, uint256 _dstAddress, bytes32 _bidId, uint256 _tokenDst, uint256 _amountDst, uint256 _nativeAmountDst, uint64 _agreementReachedTime, string _requestor, string _lpId, string _userSign, string _lpSign) payable`,
  `function transferIn(address _sender, address _dstAddress, address _token, uint256 _token_amount, uint256 _eth_amount, bytes32 _hashlock, ${TIMES}, uint64 _srcChainId, bytes32 _srcTransferId, uint64 _agreementReachedTime) payable`,
  `function confirmTransferOut(${CONFIRM_PARAMS})`,
  `function confirmTransferIn(${CONFIRM_PARAMS})`,
  `function refundTransferOut(${REFUND_PARAMS})`,
  `function refundTransferIn(${REFUND_PARAMS})`,
  'function basisPointsRate() view returns (uint256)',
  'function swapStatus(bytes32) view returns (uint8 status, uint256, uint256)',
  'event LogNewTransferOut(bytes32 transferId, address sender, address receiver, address token, uint256 amount, bytes32 hashlock, uint64 expectedSingleStepTime, uint64 tolerantSingleStepTime, uint64 earliestRefundTime, uint64 dstChainId, uint256 dstAddress, bytes32 bidId, uint256 tokenDst, uint256 amountDst, uint256 nativeAmountDst, uint64 agreementReachedTime, string requestor, string lpId, string userSign, string lpSign)',
  'event LogNewTransferIn(bytes32 transferId, address sender, address receiver, address token, uint256 token_amount, uint256 eth_amount, bytes32 hashlock, uint64 expectedSingleStepTime, uint64 tolerantSingleStepTime, uint64 earliestRefundTime, uint64 srcChainId, bytes32 srcTransferId, uint64 agreementReachedTime)',
  'event LogTransferOutConfirmed(bytes32 transferId, bytes32 preimage)',
  'event LogTransferInConfirmed(bytes32 transferId, bytes32 preimage)',
  'event LogTransferOutRefunded(bytes32 transferId)',
  'event LogTransferInRefunded(bytes32 transferId)',
  'error ExpiredOp(string op, uint64 expiredAt)',
  'error NotInOpWindow(string op, uint64 start, uint64 end)',
  'error NotUnlock(string op, uint64 lockedUntil)',
  'error InvalidSender()',
  'error InvalidAmount()',
  'error InvalidRefundTime()',
  'error InvalidHashlock()',
  'error InvalidStatus()',
] as const;

export const COMPLAINT_TUPLE =
  'tuple(uint64 srcChainId, uint256 srcAddress, string srcToken, uint64 dstChainId, uint256 dstAddress, string dstToken, string srcAmount, string dstAmount, string dstNativeAmount, string requestor, string lpId, uint64 expectedSingleStepTime, uint64 tolerantSingleStepTime, uint64 earliestRefundTime, uint64 agreementReachedTime, string userSign, string lpSign)';

export const OTMOIC_REPUTATION_ABI = [
  `function submitComplaint(${COMPLAINT_TUPLE} _complaint, bytes _sig, string _domain)`,
  'function hasComplaint(bytes32) view returns (bool)',
  `function getBidId(${COMPLAINT_TUPLE} _complaint) view returns (bytes32)`,
  `event SubmitComplaint(bytes32 bidId, ${COMPLAINT_TUPLE} complaint, string complainant)`,
  'error DuplicateBidId(bytes32 bidId)',
  'error DomainNoExists()',
  'error InvalidSigner(address expected, address actual)',
] as const;

export const swapInterface = new Interface(OTMOIC_SWAP_ABI);
export const reputationInterface = new Interface(OTMOIC_REPUTATION_ABI);

/** The chain client's event `type` for each contract event (spec/otmoic.md §4). */
export const EVENT_TYPES = {
  LogNewTransferOut: 'TransferOut',
  LogNewTransferIn: 'TransferIn',
  LogTransferOutConfirmed: 'ConfirmOut',
  LogTransferInConfirmed: 'ConfirmIn',
  LogTransferOutRefunded: 'RefundOut',
  LogTransferInRefunded: 'RefundIn',
  SubmitComplaint: 'Reputation',
} as const;

export type ChainEventType = (typeof EVENT_TYPES)[keyof typeof EVENT_TYPES];

/** The per-event callback key of a registration for each swap event type. */
export const CALLBACK_KEYS: Record<Exclude<ChainEventType, 'Reputation'>, string> = {
  TransferOut: 'on_transfer_out',
  TransferIn: 'on_transfer_in',
  ConfirmOut: 'on_confirm_out',
  ConfirmIn: 'on_confirm_in',
  RefundOut: 'on_refunded_out',
  RefundIn: 'on_refunded_in',
};
