/** The wllama backend through the shared Engine contract (src/testing/engine-contract.ts) on stories260K. */
import { describeEngineContract } from '../testing/engine-contract.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { WllamaEngine } from './engine.ts';
import { LOCAL_WLLAMA_WASM } from './vite-wasm.ts';

describeEngineContract({
  name: 'wllama',
  make: () => new WllamaEngine({ wasmUrl: LOCAL_WLLAMA_WASM }),
  load: (e) => e.load({ url: stories260kUrl() }, { contextLength: 256 }),
  prompt: 'Once upon a time',
  streamTokens: 64,
  tokenIds: true,
});
