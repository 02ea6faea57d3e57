/**
 * wllama's wasm as a Vite app serves it (the tests, the page, the CLI's headless harness): Vite's URL of
 * the installed package's `wllama.wasm`, so nothing comes from the network. (The npm package's builds
 * inline assets, so they do not import this: a site gives `wasmUrl`, or gets jsDelivr's copy.)
 */
import wasmUrl from '@wllama/wllama/esm/wasm/wllama.wasm?url';

/** URL of the installed `@wllama/wllama`'s wasm, served by Vite. */
export const LOCAL_WLLAMA_WASM: string = wasmUrl;
