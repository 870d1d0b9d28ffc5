/** Pure chain crypto for the Otmoic relay and reputation services (no HTTP, no database). */
export { ChainInputError, isChainInputError, type ChainInputErrorCode } from './errors.js';
export { hashlock, preimageBytes } from './hashlock.js';
export { parseChainId, type ChainIdInput } from './chain-id.js';
export {
  parseSwapAgreement,
  recoverSwapSigner,
  singleChainSwapAgreementSchema,
  swapAgreementSchema,
  swapDigest,
  swapDomain,
  swapDomainSeparator,
  swapEncodeType,
  swapStructHash,
  swapTypedDataTypes,
  swapTypeHash,
  type SingleChainSwapAgreement,
  type SwapAgreement,
  type SwapAgreementOf,
  type SwapDomain,
  type SwapVariant,
} from './otmoic-swap-eip712.js';
export {
  COMPLAINT_ENCODE_TYPE,
  complaintDigest,
  complaintDomain,
  complaintSchema,
  complaintTypedDataTypes,
  parseComplaint,
  recoverComplainant,
  type Complaint,
  type ComplaintDomain,
} from './complaint-eip712.js';
export { bidId, bidIdPreimage } from './bid-id.js';
export { addressToUint256, toEvmAddress, uint256ToAddress } from './conversions.js';
export { parseEvmAddress } from './evm-address.js';
export { transferId, type TransferIdInput } from './transfer-id.js';
export { recoverAddressFromDigest } from './recover-address.js';
export { parseSignature, withCanonicalV, type ParsedSignature } from './signature.js';
export {
  defaultSecp256k1Backend,
  jsSecp256k1Backend,
  nativeSecp256k1Backend,
  type Secp256k1Backend,
  type Secp256k1BackendName,
} from './secp256k1-backend.js';
export { keccakBackend } from './keccak.js';
