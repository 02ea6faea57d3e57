/**
 * The worker that hosts WebLLM's engine (`@mlc-ai/web-llm`'s `WebWorkerMLCEngineHandler`). The page talks
 * to it through `WebLlmEngine` (src/webllm/engine.ts), which terminates and recreates it on a timeout.
 */
import { WebWorkerMLCEngineHandler } from '@mlc-ai/web-llm';

const handler = new WebWorkerMLCEngineHandler();
self.onmessage = (msg: MessageEvent) => handler.onmessage(msg);
