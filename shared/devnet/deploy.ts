// Deploys the devnet's contracts from one account and hands out test tokens.
import { ContractFactory, Interface } from 'ethers';
import type { Signer } from 'ethers';
import type { CompiledContracts } from '../../contracts/compile.js';

export interface DevnetContracts {
  otmoic: string;
  reputation: string;
  token: string;
}

export interface DeployOptions {
  /** Accounts that receive `tokensPerAccount` TestToken each. */
  fundAccounts: readonly string[];
  /** Base units (18 decimals). */
  tokensPerAccount: bigint;
}

/**
 * Deploys TestToken, Otmoic and Reputation (in that order) and mints tokens.
 *
 * The order is deliberate: from a fresh deployer (nonce 0) the token lands at
 * 0x5FbDB2315678afecb367f032d93F642f64180aa3, the ERC-20 address the golden vectors use.
 */
export async function deployDevnetContracts(
  deployer: Signer,
  compiled: CompiledContracts,
  options: DeployOptions,
): Promise<DevnetContracts> {
  let nonce = await deployer.getNonce('pending');
  const deploy = async (name: keyof CompiledContracts, args: unknown[]): Promise<string> => {
    const factory = new ContractFactory(compiled[name].abi, compiled[name].bytecode, deployer);
    const contract = await factory.deploy(...args, { nonce: nonce++ });
    await contract.waitForDeployment();
    return contract.getAddress();
  };

  // Sequential: the addresses depend on the nonces, and the token's must be the vectors' one.
  const token = await deploy('TestToken', ['Otmoic Test Token', 'OTT']);
  const otmoic = await deploy('Otmoic', []);
  const reputation = await deploy('Reputation', []);

  const tokenInterface = new Interface(compiled.TestToken.abi);
  // Sent one after the other (Hardhat's automine refuses a nonce that arrives before its predecessor),
  // but receipts are awaited together at the end.
  const mints = [];
  for (const account of options.fundAccounts) {
    const data = tokenInterface.encodeFunctionData('mint', [account, options.tokensPerAccount]);
    mints.push(await deployer.sendTransaction({ to: token, data, nonce: nonce++ }));
  }
  await Promise.all(mints.map((tx) => tx.wait()));

  return { otmoic, reputation, token };
}
