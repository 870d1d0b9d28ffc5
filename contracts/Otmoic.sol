// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// The ERC-20 calls the swap contract needs; declared here so the contract has no dependencies.
interface IERC20Transfers {
    function transfer(address to, uint256 amount) external returns (bool);
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}

/// Hash-time-locked cross-chain swap, interface-compatible with Otmoic contract-evm V2.2.
///
/// The user locks funds on the source chain (transferOut), the LP locks funds on the destination
/// chain (transferIn) under the same hashlock; revealing the preimage releases both sides
/// (confirmTransferOut / confirmTransferIn), and after the earliest refund time R either side can be
/// returned to its sender. T = agreementReachedTime, E = expectedSingleStepTime,
/// Tol = tolerantSingleStepTime; every bound below is inclusive and compared with block.timestamp.
///
/// A swap is not stored field by field: its parameters are hashed into a transferId and every later
/// call must pass the same parameters again, so a wrong parameter simply finds no pending swap.
contract Otmoic {
    enum TransferStatus {
        Null,
        Pending,
        Confirmed,
        Refunded
    }

    /// Fees are fixed when the funds are locked so that a later rate change cannot alter a running swap.
    struct SwapStatus {
        TransferStatus status;
        uint256 tokenFee;
        uint256 ethFee;
    }

    /// The parameters every call of one swap side shares; grouped to keep the functions readable.
    struct Lock {
        address sender;
        address receiver;
        address token;
        uint256 tokenAmount;
        uint256 ethAmount;
        bytes32 hashlock;
        uint64 agreementReachedTime;
        uint64 expectedSingleStepTime;
        uint64 tolerantSingleStepTime;
        uint64 earliestRefundTime;
    }

    uint256 private constant BASIS_POINTS_DENOMINATOR = 10_000;

    address public owner;
    address public tollAddress;
    /// Fee in basis points of the released amount (30 = 0.30 %), read by chain clients as the "system fee".
    uint256 public basisPointsRate;

    mapping(bytes32 => SwapStatus) public swapStatus;

    event LogNewTransferOut(
        bytes32 transferId,
        address sender,
        address receiver,
        address token,
        uint256 amount,
        bytes32 hashlock,
        uint64 expectedSingleStepTime,
        uint64 tolerantSingleStepTime,
        uint64 earliestRefundTime,
        uint64 dstChainId,
        uint256 dstAddress,
        bytes32 bidId,
        uint256 tokenDst,
        uint256 amountDst,
        uint256 nativeAmountDst,
        uint64 agreementReachedTime,
        string requestor,
        string lpId,
        string userSign,
        string lpSign
    );
    event LogNewTransferIn(
        bytes32 transferId,
        address sender,
        address receiver,
        address token,
        uint256 token_amount,
        uint256 eth_amount,
        bytes32 hashlock,
        uint64 expectedSingleStepTime,
        uint64 tolerantSingleStepTime,
        uint64 earliestRefundTime,
        uint64 srcChainId,
        bytes32 srcTransferId,
        uint64 agreementReachedTime
    );
    event LogTransferOutConfirmed(bytes32 transferId, bytes32 preimage);
    event LogTransferInConfirmed(bytes32 transferId, bytes32 preimage);
    event LogTransferOutRefunded(bytes32 transferId);
    event LogTransferInRefunded(bytes32 transferId);
    event BasisPointsRateChanged(uint256 basisPointsRate);
    event TollAddressChanged(address tollAddress);
    event OwnerChanged(address owner);

    error ExpiredOp(string op, uint64 expiredAt);
    error NotInOpWindow(string op, uint64 start, uint64 end);
    error NotUnlock(string op, uint64 lockedUntil);
    error InvalidSender();
    error InvalidAmount();
    error InvalidRefundTime();
    error InvalidHashlock();
    error InvalidStatus();
    error NotOwner();
    error InvalidBasisPointsRate(uint256 basisPointsRate);
    error InvalidTollAddress();
    error FailedToSendEther();
    error TokenTransferFailed(address token);

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner();
        _;
    }

    constructor() {
        owner = msg.sender;
        // Until the owner names a treasury, fees go to the deployer.
        tollAddress = msg.sender;
    }

    // ---------------------------------------------------------------- owner settings

    function setBasisPointsRate(uint256 _basisPointsRate) external onlyOwner {
        // More than 100 % would make the payout underflow at confirm time and lock the funds.
        if (_basisPointsRate > BASIS_POINTS_DENOMINATOR) revert InvalidBasisPointsRate(_basisPointsRate);
        basisPointsRate = _basisPointsRate;
        emit BasisPointsRateChanged(_basisPointsRate);
    }

    function setTollAddress(address _tollAddress) external onlyOwner {
        // Fees sent to address(0) would burn native coin and make most ERC-20 transfers, so confirms, revert.
        if (_tollAddress == address(0)) revert InvalidTollAddress();
        tollAddress = _tollAddress;
        emit TollAddressChanged(_tollAddress);
    }

    function transferOwnership(address _owner) external onlyOwner {
        owner = _owner;
        emit OwnerChanged(_owner);
    }

    // ---------------------------------------------------------------- lock

    /// The user locks `_amount` of `_token` for the LP (`_receiver`); the destination-side terms are only logged.
    /// The strings are `memory`, not `calldata`: a calldata string takes two stack slots, and with
    /// twenty event fields that no longer fits the EVM stack even with viaIR. The ABI is the same.
    function transferOut(
        address _sender,
        address _receiver,
        address _token,
        uint256 _amount,
        bytes32 _hashlock,
        uint64 _expectedSingleStepTime,
        uint64 _tolerantSingleStepTime,
        uint64 _earliestRefundTime,
        uint64 _dstChainId,
        uint256 _dstAddress,
        bytes32 _bidId,
        uint256 _tokenDst,
        uint256 _amountDst,
        uint256 _nativeAmountDst,
        uint64 _agreementReachedTime,
        string memory _requestor,
        string memory _lpId,
        string memory _userSign,
        string memory _lpSign
    ) external payable {
        // The out side carries no separate native amount: eth_amount is 0 in its transferId.
        Lock memory lock = Lock(
            _sender,
            _receiver,
            _token,
            _amount,
            0,
            _hashlock,
            _agreementReachedTime,
            _expectedSingleStepTime,
            _tolerantSingleStepTime,
            _earliestRefundTime
        );
        uint64 deadline = _agreementReachedTime + _expectedSingleStepTime;
        if (_now() > deadline) revert ExpiredOp("transfer out", deadline);
        bytes32 transferId = _lockFunds(lock, true);

        emit LogNewTransferOut(
            transferId,
            _sender,
            _receiver,
            _token,
            _amount,
            _hashlock,
            _expectedSingleStepTime,
            _tolerantSingleStepTime,
            _earliestRefundTime,
            _dstChainId,
            _dstAddress,
            _bidId,
            _tokenDst,
            _amountDst,
            _nativeAmountDst,
            _agreementReachedTime,
            _requestor,
            _lpId,
            _userSign,
            _lpSign
        );
    }

    /// The LP locks `_token_amount` of `_token` plus `_eth_amount` of native coin for the user (`_dstAddress`).
    function transferIn(
        address _sender,
        address _dstAddress,
        address _token,
        uint256 _token_amount,
        uint256 _eth_amount,
        bytes32 _hashlock,
        uint64 _expectedSingleStepTime,
        uint64 _tolerantSingleStepTime,
        uint64 _earliestRefundTime,
        uint64 _srcChainId,
        bytes32 _srcTransferId,
        uint64 _agreementReachedTime
    ) external payable {
        Lock memory lock = Lock(
            _sender,
            _dstAddress,
            _token,
            _token_amount,
            _eth_amount,
            _hashlock,
            _agreementReachedTime,
            _expectedSingleStepTime,
            _tolerantSingleStepTime,
            _earliestRefundTime
        );
        uint64 deadline = _agreementReachedTime + 2 * _expectedSingleStepTime;
        if (_now() > deadline) revert ExpiredOp("transfer in", deadline);
        bytes32 transferId = _lockFunds(lock, false);

        emit LogNewTransferIn(
            transferId,
            _sender,
            _dstAddress,
            _token,
            _token_amount,
            _eth_amount,
            _hashlock,
            _expectedSingleStepTime,
            _tolerantSingleStepTime,
            _earliestRefundTime,
            _srcChainId,
            _srcTransferId,
            _agreementReachedTime
        );
    }

    // ---------------------------------------------------------------- confirm

    /// Releases the user's locked funds to the LP. The user may do it until T+3E; after that only a
    /// third party (the relay) may, in its own late window, so the LP is not stuck if the user goes silent.
    function confirmTransferOut(
        address _sender,
        address _receiver,
        address _token,
        uint256 _token_amount,
        uint256 _eth_amount,
        bytes32 _hashlock,
        uint64 _expectedSingleStepTime,
        uint64 _tolerantSingleStepTime,
        uint64 _earliestRefundTime,
        bytes32 _preimage,
        uint64 _agreementReachedTime
    ) external {
        Lock memory lock = Lock(
            _sender,
            _receiver,
            _token,
            _token_amount,
            _eth_amount,
            _hashlock,
            _agreementReachedTime,
            _expectedSingleStepTime,
            _tolerantSingleStepTime,
            _earliestRefundTime
        );
        uint64 confirmStart = _agreementReachedTime + 3 * _expectedSingleStepTime;
        if (msg.sender == _sender) {
            if (_now() > confirmStart) revert ExpiredOp("user confirm out", confirmStart);
        } else {
            _requireWindow(
                "non-user confirm out",
                confirmStart + 2 * _tolerantSingleStepTime,
                confirmStart + 3 * _tolerantSingleStepTime
            );
        }
        bytes32 transferId = _release(lock, true, _preimage);
        emit LogTransferOutConfirmed(transferId, _preimage);
    }

    /// Releases the LP's locked funds to the user. The LP may do it until T+3E+Tol; from then on anyone
    /// else (relay or user) may, until T+3E+2Tol, so the user still gets paid if the LP goes silent.
    function confirmTransferIn(
        address _sender,
        address _receiver,
        address _token,
        uint256 _token_amount,
        uint256 _eth_amount,
        bytes32 _hashlock,
        uint64 _expectedSingleStepTime,
        uint64 _tolerantSingleStepTime,
        uint64 _earliestRefundTime,
        bytes32 _preimage,
        uint64 _agreementReachedTime
    ) external {
        Lock memory lock = Lock(
            _sender,
            _receiver,
            _token,
            _token_amount,
            _eth_amount,
            _hashlock,
            _agreementReachedTime,
            _expectedSingleStepTime,
            _tolerantSingleStepTime,
            _earliestRefundTime
        );
        uint64 lpDeadline = _agreementReachedTime + 3 * _expectedSingleStepTime + _tolerantSingleStepTime;
        if (msg.sender == _sender) {
            if (_now() > lpDeadline) revert ExpiredOp("lp confirm in", lpDeadline);
        } else {
            _requireWindow("non-lp confirm in", lpDeadline, lpDeadline + _tolerantSingleStepTime);
        }
        bytes32 transferId = _release(lock, false, _preimage);
        emit LogTransferInConfirmed(transferId, _preimage);
    }

    // ---------------------------------------------------------------- refund

    /// After R anyone may return the user's locked funds to the user.
    function refundTransferOut(
        address _sender,
        address _receiver,
        address _token,
        uint256 _token_amount,
        uint256 _eth_amount,
        bytes32 _hashlock,
        uint64 _expectedSingleStepTime,
        uint64 _tolerantSingleStepTime,
        uint64 _earliestRefundTime,
        uint64 _agreementReachedTime
    ) external {
        Lock memory lock = Lock(
            _sender,
            _receiver,
            _token,
            _token_amount,
            _eth_amount,
            _hashlock,
            _agreementReachedTime,
            _expectedSingleStepTime,
            _tolerantSingleStepTime,
            _earliestRefundTime
        );
        if (_now() <= _earliestRefundTime) revert NotUnlock("refund out", _earliestRefundTime);
        bytes32 transferId = _refund(lock, true);
        emit LogTransferOutRefunded(transferId);
    }

    /// After R anyone may return the LP's locked funds to the LP.
    function refundTransferIn(
        address _sender,
        address _receiver,
        address _token,
        uint256 _token_amount,
        uint256 _eth_amount,
        bytes32 _hashlock,
        uint64 _expectedSingleStepTime,
        uint64 _tolerantSingleStepTime,
        uint64 _earliestRefundTime,
        uint64 _agreementReachedTime
    ) external {
        Lock memory lock = Lock(
            _sender,
            _receiver,
            _token,
            _token_amount,
            _eth_amount,
            _hashlock,
            _agreementReachedTime,
            _expectedSingleStepTime,
            _tolerantSingleStepTime,
            _earliestRefundTime
        );
        if (_now() <= _earliestRefundTime) revert NotUnlock("refund in", _earliestRefundTime);
        bytes32 transferId = _refund(lock, false);
        emit LogTransferInRefunded(transferId);
    }

    // ---------------------------------------------------------------- internals

    /// The id every client recomputes off chain; the field order and packing are part of the interface.
    function _transferId(Lock memory lock, bool isOut) private view returns (bytes32) {
        return
            keccak256(
                abi.encodePacked(
                    lock.sender,
                    lock.receiver,
                    lock.hashlock,
                    lock.agreementReachedTime,
                    lock.expectedSingleStepTime,
                    lock.tolerantSingleStepTime,
                    lock.earliestRefundTime,
                    lock.token,
                    lock.tokenAmount,
                    lock.ethAmount,
                    isOut,
                    block.chainid
                )
            );
    }

    /// Common checks and the pull of funds for both lock functions.
    function _lockFunds(Lock memory lock, bool isOut) private returns (bytes32 transferId) {
        // Only the owner of the funds may lock them, so nobody can spend another account's allowance.
        if (msg.sender != lock.sender) revert InvalidSender();
        if (lock.tokenAmount == 0) revert InvalidAmount();
        // R must come after the last confirm window (relay's confirmTransferOut ends at T+3E+3Tol),
        // otherwise a side could be refunded while the other side can still be confirmed.
        uint64 lastConfirm = lock.agreementReachedTime +
            3 *
            lock.expectedSingleStepTime +
            3 *
            lock.tolerantSingleStepTime;
        if (lock.earliestRefundTime <= lastConfirm) revert InvalidRefundTime();

        transferId = _transferId(lock, isOut);
        SwapStatus storage swap = swapStatus[transferId];
        if (swap.status != TransferStatus.Null) revert InvalidStatus();
        swap.status = TransferStatus.Pending;
        swap.tokenFee = _fee(lock.tokenAmount);
        swap.ethFee = _fee(lock.ethAmount);

        if (lock.token == address(0)) {
            if (msg.value != lock.tokenAmount + lock.ethAmount) revert InvalidAmount();
        } else {
            if (msg.value != lock.ethAmount) revert InvalidAmount();
            _pullToken(lock.token, lock.sender, lock.tokenAmount);
        }
    }

    /// Pays a pending side to its receiver (minus the fees fixed at lock time, which go to tollAddress).
    function _release(Lock memory lock, bool isOut, bytes32 preimage) private returns (bytes32 transferId) {
        transferId = _transferId(lock, isOut);
        SwapStatus storage swap = swapStatus[transferId];
        if (swap.status != TransferStatus.Pending) revert InvalidStatus();
        if (keccak256(abi.encodePacked(preimage)) != lock.hashlock) revert InvalidHashlock();
        // State first, transfers last: a re-entering receiver finds the swap already confirmed.
        swap.status = TransferStatus.Confirmed;

        uint256 tokenFee = swap.tokenFee;
        uint256 ethFee = swap.ethFee;
        if (lock.token == address(0)) {
            _sendEther(lock.receiver, lock.tokenAmount - tokenFee + lock.ethAmount - ethFee);
            _sendEther(tollAddress, tokenFee + ethFee);
        } else {
            _pushToken(lock.token, lock.receiver, lock.tokenAmount - tokenFee);
            _pushToken(lock.token, tollAddress, tokenFee);
            _sendEther(lock.receiver, lock.ethAmount - ethFee);
            _sendEther(tollAddress, ethFee);
        }
    }

    /// Returns a pending side in full (no fee) to its sender.
    function _refund(Lock memory lock, bool isOut) private returns (bytes32 transferId) {
        transferId = _transferId(lock, isOut);
        SwapStatus storage swap = swapStatus[transferId];
        if (swap.status != TransferStatus.Pending) revert InvalidStatus();
        swap.status = TransferStatus.Refunded;

        if (lock.token == address(0)) {
            _sendEther(lock.sender, lock.tokenAmount + lock.ethAmount);
        } else {
            _pushToken(lock.token, lock.sender, lock.tokenAmount);
            _sendEther(lock.sender, lock.ethAmount);
        }
    }

    function _requireWindow(string memory op, uint64 start, uint64 end) private view {
        uint64 nowTs = _now();
        if (nowTs < start || nowTs > end) revert NotInOpWindow(op, start, end);
    }

    function _fee(uint256 amount) private view returns (uint256) {
        return (amount * basisPointsRate) / BASIS_POINTS_DENOMINATOR;
    }

    function _now() private view returns (uint64) {
        return uint64(block.timestamp);
    }

    function _sendEther(address to, uint256 amount) private {
        if (amount == 0) return;
        (bool sent, ) = to.call{value: amount}("");
        if (!sent) revert FailedToSendEther();
    }

    // Low-level calls so that tokens which return nothing (USDT style) are accepted, and false is rejected.
    function _pullToken(address token, address from, uint256 amount) private {
        _callToken(token, abi.encodeCall(IERC20Transfers.transferFrom, (from, address(this), amount)));
    }

    function _pushToken(address token, address to, uint256 amount) private {
        if (amount == 0) return;
        _callToken(token, abi.encodeCall(IERC20Transfers.transfer, (to, amount)));
    }

    function _callToken(address token, bytes memory data) private {
        if (token.code.length == 0) revert TokenTransferFailed(token);
        (bool ok, bytes memory result) = token.call(data);
        if (!ok || (result.length != 0 && !abi.decode(result, (bool)))) revert TokenTransferFailed(token);
    }
}
