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

  it('redacts the relay key when the configuration is shown', () => {
    expect(JSON.stringify(redactConfig(load(shipped)))).not.toContain(
      '7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
    );
  });
});
