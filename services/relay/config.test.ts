import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, redactConfig } from '../../shared/config/index.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const shipped = readFileSync(path.join(ROOT, 'config.toml'), 'utf8');
const load = (text: string) => loadConfig({ text, env: {}, require: ['relay'], root: ROOT });

describe('[relay] configuration', () => {
  it('parses the shipped devnet section with its defaults', () => {
    expect(load(shipped).relay).toEqual({
      port: 9103,
      systemChainId: '9006',
      chainId: 97,
      rpc: 'http://127.0.0.1:8545',
      contractAddr: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
      priv: '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
      senderWallets: { LpWallet: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' },
      blockTimeSeconds: 3,
      maxGasPriceWei: '200000000000',
      maxGasLimit: 300_000,
      rpcFallbacks: [],
      rpcTimeoutMs: 10_000,
      confirmations: 2,
      windowMarginSeconds: 15,
      bumpAfterBlocks: 3,
      maxRefusals: 3,
      maxPaidFailures: 2,
      maxWindowAheadSeconds: 604_800,
      senderLookbackBlocks: 200_000,
      apiKeys: [],
      allowIps: [],
      restrictReads: false,
      rateLimit: { max: 120, windowMs: 60_000 },
      acceptChecks: true,
      errorsAsHttp200: false,
      chainClientRegisterUrl: 'http://127.0.0.1:9900/support/register',
      reregisterSeconds: 60,
    });
  });

  it('names every bad key without echoing the values, the key above all', () => {
    const badKey = '0xnot-a-key-but-secret-looking-text';
    const text = `[relay]\nport = 0\nsystemChainId = 9006\nchainId = 97\nrpc = "ftp://x"\ncontractAddr = "0x12"\npriv = "${badKey}"\nsurprise = 1\n`;
    let error: ConfigError | undefined;
    try {
      load(text);
    } catch (caught) {
      error = caught as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error!.issues.map((i) => i.key).sort()).toEqual(
      ['relay', 'relay.contractAddr', 'relay.port', 'relay.priv', 'relay.rpc', 'relay.systemChainId'].sort(),
    );
    expect(error!.lines().join('\n')).not.toContain(badKey);
  });

  it('redacts the relay key, the API keys and the RPC URLs (they carry provider keys) when shown', () => {
    expect(JSON.stringify(redactConfig(load(shipped)))).not.toContain(
      '7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
    );
    const withSecrets = shipped.replace(
      'rpc = "http://127.0.0.1:8545"\ncontractAddr',
      'rpc = "https://node.example/v3/rpc-secret-0123456789"\nrpcFallbacks = ["https://other.example/key/fallback-secret-0123456789"]\napiKeys = ["api-secret-0123456789abcdef"]\ncontractAddr',
    );
    const printed = JSON.stringify(redactConfig(load(withSecrets)));
    expect(load(withSecrets).relay!.apiKeys).toEqual(['api-secret-0123456789abcdef']);
    for (const secret of ['rpc-secret', 'fallback-secret', 'api-secret'])
      expect(printed).not.toContain(secret);
  });
});
