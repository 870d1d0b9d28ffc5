/**
 * secp256k1 public-key recovery, the expensive half of signer recovery.
 *
 * Two backends with one contract:
 * - `native`: libsecp256k1 through the `secp256k1` npm package (v5), whose tarball ships prebuilt
 *   N-API binaries (linux-x64 glibc/musl, darwin-arm64, win32-x64) loaded by node-gyp-build.
 *   ~58 µs per recovery on the 2-core target, vs ~1.3 ms in pure JS.
 * - `js`: @noble/curves, used when the native module cannot load (other platforms, no prebuild).
 *
 * We load `secp256k1/bindings.js` directly: the package's main entry would silently fall back to
 * `elliptic`, and we want to know which implementation runs.
 * `OTMOIC_SECP256K1=js` forces the JS backend (tests of the fallback); `OTMOIC_SECP256K1=native`
 * makes a missing native module an error at import time instead of a silent slowdown.
 */
import { createRequire } from 'node:module';
import { secp256k1 as nobleSecp256k1 } from '@noble/curves/secp256k1.js';

export type Secp256k1BackendName = 'native' | 'js';

export interface Secp256k1Backend {
  readonly name: Secp256k1BackendName;
  /**
   * Uncompressed public key (65 bytes, 0x04 prefix) that produced the signature (r ‖ s, 64 bytes)
   * with the given recovery id over the 32-byte digest. Throws if no key can be recovered.
   */
  recoverPublicKey(digest: Uint8Array, compactSignature: Uint8Array, recoveryId: 0 | 1): Uint8Array;
}

/** The part of the `secp256k1` package's native API that we use. */
interface NativeSecp256k1 {
  ecdsaRecover(
    signature: Uint8Array,
    recoveryId: number,
    digest: Uint8Array,
    compressed: boolean,
  ): Uint8Array;
}

export const jsSecp256k1Backend: Secp256k1Backend = {
  name: 'js',
  recoverPublicKey(digest, compactSignature, recoveryId) {
    return nobleSecp256k1.Signature.fromBytes(compactSignature, 'compact')
      .addRecoveryBit(recoveryId)
      .recoverPublicKey(digest)
      .toBytes(false);
  },
};

function loadNativeBackend(): { backend?: Secp256k1Backend; loadError?: unknown } {
  try {
    const native = createRequire(import.meta.url)('secp256k1/bindings.js') as NativeSecp256k1;
    return {
      backend: {
        name: 'native',
        recoverPublicKey: (digest, compactSignature, recoveryId) =>
          native.ecdsaRecover(compactSignature, recoveryId, digest, false),
      },
    };
  } catch (loadError) {
    return { loadError };
  }
}

const requestedBackend = process.env['OTMOIC_SECP256K1'];
if (
  requestedBackend !== undefined &&
  requestedBackend !== '' &&
  requestedBackend !== 'js' &&
  requestedBackend !== 'native'
) {
  throw new Error(`OTMOIC_SECP256K1 must be "native" or "js", got "${requestedBackend}"`);
}

const nativeLoad = loadNativeBackend();

/** The native backend when its binary loaded on this machine, else undefined. */
export const nativeSecp256k1Backend: Secp256k1Backend | undefined = nativeLoad.backend;

if (requestedBackend === 'native' && !nativeSecp256k1Backend) {
  throw new Error('OTMOIC_SECP256K1=native but the native secp256k1 module did not load', {
    cause: nativeLoad.loadError,
  });
}

/** The backend used unless a caller passes one: native when available and not overridden. */
export const defaultSecp256k1Backend: Secp256k1Backend =
  requestedBackend === 'js' ? jsSecp256k1Backend : (nativeSecp256k1Backend ?? jsSecp256k1Backend);
