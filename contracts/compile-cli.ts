// `npm run compile-contracts`: compiles (or confirms the cache of) the contracts and prints what was built.
import { compileContracts, solcVersion } from './compile.js';

const force = process.argv.includes('--force');
const started = performance.now();
const compiled = await compileContracts({ force });
const elapsedMs = Math.round(performance.now() - started);
for (const [name, { abi, bytecode }] of Object.entries(compiled)) {
  console.log(`${name}: ${abi.length} ABI entries, ${(bytecode.length - 2) / 2} bytes of init code`);
}
console.log(
  `solc-js ${solcVersion()}, ${force ? 'forced compile' : 'compile or cache hit'} in ${elapsedMs} ms`,
);
