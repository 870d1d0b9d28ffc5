// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// Test receiver for the relay's sender: receiving native coin burns gas. `mode` 1 burns all it is
/// given but 30 000 (enough for the caller to finish), so an estimate is cheap but a generous gas limit is
/// spent in full; `mode` 2 demands at least `need` gas, so any estimate within a smaller cap fails; `mode` 3
/// burns `need` loop steps, then refuses while `armed`: armed between an estimate and its block, it makes a
/// transaction that estimated fine revert on chain (gas paid), as a receiver its owner controls can.
contract GasBurner {
    uint256 public immutable mode;
    uint256 public immutable need;
    uint256 public received;
    bool public armed;

    constructor(uint256 mode_, uint256 need_) {
        mode = mode_;
        need = need_;
    }

    function arm(bool on) external {
        armed = on;
    }

    receive() external payable {
        if (mode == 3) {
            uint256 steps;
            while (steps < need) {
                unchecked {
                    steps++;
                }
            }
            require(!armed, "armed");
            received += msg.value;
            return;
        }
        if (mode == 2) {
            require(gasleft() >= need, "not enough gas to receive");
            received += msg.value;
            return;
        }
        uint256 i;
        while (gasleft() > 30_000) {
            unchecked {
                i++;
            }
        }
        received += msg.value + (i & 0);
    }
}
