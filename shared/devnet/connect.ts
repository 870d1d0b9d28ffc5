// A running devnet chain seen from another process (the demo, tests of `npm start`): its JSON-RPC URL is all
// it takes, since the contracts sit at the deployer's fixed addresses and the accounts are Hardhat's.
import { JsonRpcProvider, Network, Wallet, getCreateAddress } from 'ethers';
import { chainClock } from './chain-clock.js';
import type { DevnetChain } from './devnet.js';
import { hardhatDefaultAccounts } from './hardhat-node.js';

export function connectDevnetChain(rpcUrl: string, chainId: number): DevnetChain {
  const provider = new JsonRpcProvider(rpcUrl, chainId, {
    staticNetwork: Network.from(chainId),
    cacheTimeout: -1,
    pollingInterval: 50,
  });
  const accounts = hardhatDefaultAccounts().map(({ privateKey }) => ({
    address: new Wallet(privateKey).address,
    privateKey,
  }));
  const deployer = accounts[0]!.address;
  const at = (nonce: number) => getCreateAddress({ from: deployer, nonce });
  return {
    chainId,
    rpcUrl,
    provider,
    // deployDevnetContracts' order: TestToken, Otmoic, Reputation from a fresh deployer.
    contracts: { token: at(0), otmoic: at(1), reputation: at(2) },
    accounts,
    wallet(index) {
      const account = accounts[index];
      if (account === undefined) throw new RangeError(`no devnet account ${index}`);
      return new Wallet(account.privateKey, provider);
    },
    ...chainClock((method, params = []) => provider.send(method, params)),
  };
}
