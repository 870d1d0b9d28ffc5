/**
 * bidId of a swap, as the reputation contract's getBidId and the LP node compute it:
 * keccak256 of the UTF-8 concatenation, without separators, of
 * agreementReachedTime ‖ srcChainId ‖ srcAddress ‖ srcToken ‖ dstChainId ‖ dstAddress ‖ dstToken ‖
 * srcAmount ‖ dstAmount ‖ dstNativeAmount ‖ requestor ‖ lpId ‖ expectedSingleStepTime ‖
 * tolerantSingleStepTime ‖ earliestRefundTime ‖ userSign ‖ lpSign, numbers in base 10
 * (srcAddress / dstAddress as the decimal of their uint256). A complaint joins its swap by it.
 */
import type { Complaint } from './complaint-eip712.js';
import { bytesToHex } from './hex.js';
import { keccak256Utf8 } from './keccak.js';

export function bidIdPreimage(complaint: Complaint): string {
  const c = complaint;
  return [
    c.agreementReachedTime,
    c.srcChainId,
    c.srcAddress,
    c.srcToken,
    c.dstChainId,
    c.dstAddress,
    c.dstToken,
    c.srcAmount,
    c.dstAmount,
    c.dstNativeAmount,
    c.requestor,
    c.lpId,
    c.expectedSingleStepTime,
    c.tolerantSingleStepTime,
    c.earliestRefundTime,
    c.userSign,
    c.lpSign,
  ]
    .map((part) => (typeof part === 'bigint' ? part.toString(10) : part))
    .join('');
}

/** Lowercase 0x-hex bytes32. */
export function bidId(complaint: Complaint): string {
  return bytesToHex(keccak256Utf8(bidIdPreimage(complaint)));
}
