/**
 * Backend selection: native libsecp256k1 when its prebuilt binary loads, @noble/curves otherwise,
 * OTMOIC_SECP256K1 to force either. Each case re-imports the module with its own environment.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

type BackendModule = typeof import('./secp256k1-backend.js');

async function freshBackendModule(env: string | undefined, nativeLoads = true): Promise<BackendModule> {
  vi.resetModules();
  if (env === undefined) vi.stubEnv('OTMOIC_SECP256K1', undefined);
  else vi.stubEnv('OTMOIC_SECP256K1', env);
  if (!nativeLoads) {
    vi.doMock('node:module', () => ({
      createRequire: () => () => {
        throw new Error('simulated: no prebuilt binary for this platform');
      },
    }));
  }
  return import('./secp256k1-backend.js');
}

afterEach(() => {
  vi.doUnmock('node:module');
  vi.unstubAllEnvs();
  vi.resetModules();
});

const DIGEST = Buffer.from('6974288da7178f76d9bd66fb2569d60f2a9853f8692a62ac7f0f3f8a5c736efa', 'hex');
const SIGNATURE_RS = Buffer.from(
  '5a9dd33417c21e3244d70512b07516b8df1f60c145a804b6e6f09e6e457e7017140d4ca6a42eeb22e6fc7fab7dcab31fdb3aebc9e747ef2e607e97c72fec4e41',
  'hex',
);

describe('secp256k1 backend selection', () => {
  it('uses the native module by default, and it loads on linux-x64 from the package prebuilds', async () => {
    const backends = await freshBackendModule(undefined);
    if (process.platform === 'linux' && process.arch === 'x64')
      expect(backends.nativeSecp256k1Backend).toBeDefined();
    expect(backends.defaultSecp256k1Backend.name).toBe(backends.nativeSecp256k1Backend ? 'native' : 'js');
  });

  it('recovers the same 65-byte public key on both backends', async () => {
    const { nativeSecp256k1Backend, jsSecp256k1Backend } = await freshBackendModule(undefined);
    const fromJs = jsSecp256k1Backend.recoverPublicKey(DIGEST, SIGNATURE_RS, 0);
    expect(fromJs).toHaveLength(65);
    expect(fromJs[0]).toBe(4);
    if (nativeSecp256k1Backend)
      expect(nativeSecp256k1Backend.recoverPublicKey(DIGEST, SIGNATURE_RS, 0)).toEqual(fromJs);
  });

  it('OTMOIC_SECP256K1=js forces the JS backend', async () => {
    expect((await freshBackendModule('js')).defaultSecp256k1Backend.name).toBe('js');
  });

  it('falls back to JS when the native module cannot load, and the fallback recovers signers', async () => {
    const backends = await freshBackendModule(undefined, false);
    expect(backends.nativeSecp256k1Backend).toBeUndefined();
    expect(backends.defaultSecp256k1Backend.name).toBe('js');
    const { recoverSwapSigner, parseSwapAgreement } = await import('./otmoic-swap-eip712.js');
    const { relayVectors } = await import('../../test/fixtures/otmoic-relay-vectors.js');
    const vector = relayVectors.eip712.cases[0]!;
    const value = parseSwapAgreement(vector.request.value, 'swap');
    expect(recoverSwapSigner(value, vector.request.signature, vector.chain_id, 'swap')).toBe(
      relayVectors.eip712.expected_signer,
    );
  });

  it('OTMOIC_SECP256K1=native fails loudly when the native module cannot load', async () => {
    await expect(freshBackendModule('native', false)).rejects.toThrow(
      /OTMOIC_SECP256K1=native but the native secp256k1 module did not load/,
    );
  });

  it('rejects an unknown OTMOIC_SECP256K1 value', async () => {
    await expect(freshBackendModule('wasm')).rejects.toThrow(/must be "native" or "js"/);
  });
});
