// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// Complaint registry, interface-compatible with Otmoic reputation-contract-evm V2.2.
///
/// A complainant signs a Complaint (EIP-712, domain "Otmoic Reputation" / "1" / chainId / this contract)
/// and someone (the Agent) submits it with the complainant's DID domain. The contract only checks that
/// the signer owns the domain and that the bid has no complaint yet; judging the complaint is off chain.
///
/// The real deployment asks the Terminus DID contract who owns a domain; on a devnet there is no such
/// contract, so this one keeps a small owner-managed domain -> address registry instead.
contract Reputation {
    struct Complaint {
        uint64 srcChainId;
        uint256 srcAddress;
        string srcToken;
        uint64 dstChainId;
        uint256 dstAddress;
        string dstToken;
        string srcAmount;
        string dstAmount;
        string dstNativeAmount;
        string requestor;
        string lpId;
        uint64 expectedSingleStepTime;
        uint64 tolerantSingleStepTime;
        uint64 earliestRefundTime;
        uint64 agreementReachedTime;
        string userSign;
        string lpSign;
    }

    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("Otmoic Reputation");
    bytes32 private constant VERSION_HASH = keccak256("1");
    bytes32 private constant COMPLAINT_TYPEHASH =
        keccak256(
            "Complaint(uint64 srcChainId,uint256 srcAddress,string srcToken,uint64 dstChainId,uint256 dstAddress,"
            "string dstToken,string srcAmount,string dstAmount,string dstNativeAmount,string requestor,string lpId,"
            "uint64 expectedSingleStepTime,uint64 tolerantSingleStepTime,uint64 earliestRefundTime,"
            "uint64 agreementReachedTime,string userSign,string lpSign)"
        );
    /// Upper bound of a canonical ECDSA s value (secp256k1n / 2): larger ones are malleable twins.
    uint256 private constant MAX_S = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    address public owner;
    mapping(bytes32 => bool) public hasComplaint;
    mapping(string => address) private _domainOwners;

    event SubmitComplaint(bytes32 bidId, Complaint complaint, string complainant);
    event DomainOwnerSet(string domain, address owner);
    event OwnerChanged(address owner);

    error DuplicateBidId(bytes32 bidId);
    error DomainNoExists();
    error InvalidSigner(address signer, address domainOwner);
    error NotOwner();

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner();
        _;
    }

    constructor() {
        owner = msg.sender;
    }

    // ---------------------------------------------------------------- DID registry (stand-in for Terminus DID)

    /// Registers, moves or (with address(0)) removes a DID domain.
    function setDomainOwner(string calldata domain, address domainOwner) external onlyOwner {
        _domainOwners[domain] = domainOwner;
        emit DomainOwnerSet(domain, domainOwner);
    }

    function ownerOfDomain(string calldata domain) external view returns (address) {
        return _domainOwners[domain];
    }

    function transferOwnership(address newOwner) external onlyOwner {
        owner = newOwner;
        emit OwnerChanged(newOwner);
    }

    // ---------------------------------------------------------------- complaints

    function submitComplaint(Complaint calldata _complaint, bytes calldata _sig, string calldata _domain) external {
        bytes32 bidId = getBidId(_complaint);
        // One complaint per bid: the first complainant wins, replays of the same signature are refused.
        if (hasComplaint[bidId]) revert DuplicateBidId(bidId);

        address domainOwner = _domainOwners[_domain];
        if (domainOwner == address(0)) revert DomainNoExists();
        address signer = _recover(_digest(_complaint), _sig);
        if (signer != domainOwner) revert InvalidSigner(signer, domainOwner);

        hasComplaint[bidId] = true;
        emit SubmitComplaint(bidId, _complaint, _domain);
    }

    /// The swap's bid id: keccak256 of the utf8 concatenation of the fields (numbers in base 10, no
    /// separators) in this order. LP nodes build the same string for the bidId of transferOut, which is
    /// how a complaint is joined to its swap.
    function getBidId(Complaint calldata c) public pure returns (bytes32) {
        bytes memory head = abi.encodePacked(
            _decimal(c.agreementReachedTime),
            _decimal(c.srcChainId),
            _decimal(c.srcAddress),
            c.srcToken,
            _decimal(c.dstChainId),
            _decimal(c.dstAddress),
            c.dstToken,
            c.srcAmount,
            c.dstAmount
        );
        bytes memory tail = abi.encodePacked(
            c.dstNativeAmount,
            c.requestor,
            c.lpId,
            _decimal(c.expectedSingleStepTime),
            _decimal(c.tolerantSingleStepTime),
            _decimal(c.earliestRefundTime),
            c.userSign,
            c.lpSign
        );
        return keccak256(bytes.concat(head, tail));
    }

    /// EIP-712 domain separator; computed per call so it stays right if the chain id ever changes.
    function domainSeparator() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid, address(this)));
    }

    // ---------------------------------------------------------------- internals

    function _digest(Complaint calldata c) private view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), _structHash(c)));
    }

    /// EIP-712 hashStruct: static fields as words, strings as keccak256 of their bytes, in declaration order.
    /// Split into two abi.encode halves (all words are 32 bytes, so the concatenation is the same encoding).
    function _structHash(Complaint calldata c) private pure returns (bytes32) {
        bytes memory head = abi.encode(
            COMPLAINT_TYPEHASH,
            c.srcChainId,
            c.srcAddress,
            keccak256(bytes(c.srcToken)),
            c.dstChainId,
            c.dstAddress,
            keccak256(bytes(c.dstToken)),
            keccak256(bytes(c.srcAmount)),
            keccak256(bytes(c.dstAmount))
        );
        bytes memory tail = abi.encode(
            keccak256(bytes(c.dstNativeAmount)),
            keccak256(bytes(c.requestor)),
            keccak256(bytes(c.lpId)),
            c.expectedSingleStepTime,
            c.tolerantSingleStepTime,
            c.earliestRefundTime,
            c.agreementReachedTime,
            keccak256(bytes(c.userSign)),
            keccak256(bytes(c.lpSign))
        );
        return keccak256(bytes.concat(head, tail));
    }

    /// Signer of `digest`, or address(0) when the signature is malformed: the caller then reports
    /// InvalidSigner with signer 0, which is clearer than a bare revert.
    /// Accepts 65-byte signatures with v in {27, 28, 0, 1} and 64-byte EIP-2098 compact ones.
    function _recover(bytes32 digest, bytes calldata sig) private pure returns (address) {
        bytes32 r;
        bytes32 s;
        uint8 v;
        if (sig.length == 65) {
            r = bytes32(sig[0:32]);
            s = bytes32(sig[32:64]);
            v = uint8(sig[64]);
            if (v < 27) v += 27;
        } else if (sig.length == 64) {
            r = bytes32(sig[0:32]);
            bytes32 vs = bytes32(sig[32:64]);
            s = vs & bytes32(type(uint256).max >> 1);
            v = uint8(uint256(vs) >> 255) + 27;
        } else {
            return address(0);
        }
        if (v != 27 && v != 28) return address(0);
        if (uint256(s) > MAX_S) return address(0);
        return ecrecover(digest, v, r, s);
    }

    function _decimal(uint256 value) private pure returns (string memory) {
        if (value == 0) return "0";
        uint256 digits;
        for (uint256 rest = value; rest != 0; rest /= 10) digits++;
        bytes memory out = new bytes(digits);
        for (uint256 i = digits; i > 0; i--) {
            out[i - 1] = bytes1(uint8(48 + (value % 10)));
            value /= 10;
        }
        return string(out);
    }
}
