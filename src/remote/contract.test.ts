/**
 * The remote backend through the shared Engine contract (src/testing/engine-contract.ts) against the
 * scripted vLLM-format server (src/testing/openai-server.ts): its text stream carries no token ids.
 */
import { afterAll, beforeAll } from 'vitest';
import { describeEngineContract } from '../testing/engine-contract.ts';
import { type OpenAiTestServer, startOpenAiServer } from '../testing/openai-server.ts';
import { RemoteEngine } from './engine.ts';

let server: OpenAiTestServer;
beforeAll(async () => {
  server = await startOpenAiServer({ firstDelayMs: 5, delayMs: 5 });
});
afterAll(() => server.close());

describeEngineContract({
  name: 'remote (vLLM wire format)',
  make: () => new RemoteEngine({ baseUrl: server.url, model: 'test-model' }),
  load: (e) => (e as RemoteEngine).load(),
  prompt: 'Once upon a time',
  streamTokens: 16,
  tokenIds: false,
  // Made with a model name, the engine needs no load (load() checks the server's model list).
  readyBeforeLoad: true,
});
