/** Our WebGPU engine through the shared Engine contract (src/testing/engine-contract.ts) on stories260K. */
import { openModelSource } from '../library/opener.ts';
import { describeEngineContract } from '../testing/engine-contract.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { WebGpuEngine } from './engine.ts';

describeEngineContract({
  name: 'WebGPU',
  make: () => new WebGpuEngine({ openModel: openModelSource }),
  load: (e) => e.load({ url: stories260kUrl() }, { contextLength: 256 }),
  prompt: 'Once upon a time',
  streamTokens: 64,
  tokenIds: true,
});
