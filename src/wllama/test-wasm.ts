/**
 * wllama's wasm as this repository serves it (tests, the page): Vite's URL of the installed package's
 * `wllama.wasm`, so nothing comes from the network.
 */
import wasmUrl from '@wllama/wllama/esm/wasm/wllama.wasm?url';

/** URL of the installed `@wllama/wllama`'s wasm, served by Vite. */
export const LOCAL_WLLAMA_WASM: string = wasmUrl;
