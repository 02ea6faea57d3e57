// bench-prefill's engines that time a prompt's TTFT: ours and wllama in Chromium, node-llama-cpp in Node.
import type { Llama } from 'node-llama-cpp';
import type { Page } from 'playwright-core';
import type { WllamaRun } from '../src/bench/wllama-page.ts';
import { callHarness } from '../src/cli/harness-server.ts';
import { requestMetrics, tokenTimesFromChunks } from '../src/core/metrics.ts';
import type { GenerateResult } from '../src/core/types.ts';
import { type EngineId, LLAMA_BATCH, N_CTX, TOKENS } from './bench-prefill-args.ts';
import type { PrefillRun } from './bench-prefill-run.ts';

/** An engine with a model loaded: one `--tokens` greedy generation of a prompt, measured. */
export interface Runner {
  id: EngineId;
  run(prompt: string): Promise<PrefillRun>;
}

/** Ours through the page's `window.harness` (the model already loaded there). */
export function oursRunner(page: Page): Runner {
  return {
    id: 'ours',
    async run(prompt) {
      const r = await callHarness<GenerateResult>(page, 'generate', {
        prompt,
        maxTokens: TOKENS,
        ignoreEos: true,
        temperature: 0,
      });
      if (r.tokenTimesMs.length !== TOKENS)
        throw new Error(`ours made ${r.tokenTimesMs.length} tokens, expected ${TOKENS}`);
      const m = requestMetrics({ ...r, promptTokens: r.promptTokenIds.length });
      return { promptTokens: m.promptTokens, ttftMs: m.ttftMs, prefillTokPerS: m.prefillTokPerS };
    },
  };
}

/** wllama through its page's `window.wllamaBench` (the model already loaded there). */
export function wllamaRunner(wp: Page): Runner {
  return {
    id: 'wllama',
    async run(prompt) {
      const r: WllamaRun = await wp.evaluate(([p, k]) => window.wllamaBench.run(p as string, k as number), [
        prompt,
        TOKENS,
      ] as const);
      if (r.cachedTokens !== 0) throw new Error(`wllama reused ${r.cachedTokens} cached prompt tokens`);
      if (r.completionTokens !== TOKENS)
        throw new Error(`wllama made ${r.completionTokens} tokens, expected ${TOKENS}`);
      // One token per token chunk; tokens whose text was held back are counted at the final chunk.
      const tokenChunks = r.isTokenChunk.filter(Boolean).length;
      const counts = r.isTokenChunk.map((t) => (t ? 1 : 0));
      counts[counts.length - 1] += r.completionTokens - tokenChunks;
      const m = requestMetrics({
        tStartMs: r.tStartMs,
        tokenTimesMs: tokenTimesFromChunks(r.chunkTimesMs, counts),
        promptTokens: r.promptTokens,
      });
      const t = r.timings;
      return {
        promptTokens: m.promptTokens,
        ttftMs: m.ttftMs,
        prefillTokPerS: m.prefillTokPerS,
        internalTokPerS: t && t.prompt_ms > 0 ? (t.prompt_n * 1000) / t.prompt_ms : undefined,
      };
    },
  };
}

let llamaPromise: Promise<Llama> | undefined;
/** node-llama-cpp's CPU build (never built here), loaded once. */
export const getLlamaCpu = async () => {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  llamaPromise ??= getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  return llamaPromise;
};
/** Frees {@link getLlamaCpu}'s llama, if it was loaded. */
export async function disposeLlamaCpu(): Promise<void> {
  if (llamaPromise) await (await llamaPromise).dispose();
}

/** node-llama-cpp on the file, 1 thread; `tokens` counts a text's tokens with BOS. */
export async function llamaCppRunner(
  path: string,
): Promise<Runner & { close(): Promise<void>; tokens(t: string): number }> {
  const llama = await getLlamaCpu();
  const model = await llama.loadModel({ modelPath: path });
  const context = await model.createContext({
    contextSize: N_CTX,
    sequences: 1,
    threads: 1,
    batchSize: LLAMA_BATCH,
  });
  const seq = context.getSequence();
  const idsOf = (prompt: string) => [model.tokens.bos!, ...model.tokenize(prompt)];
  return {
    id: 'llama-cpp',
    tokens: (t) => idsOf(t).length,
    async run(prompt) {
      const ids = idsOf(prompt);
      await seq.clearHistory();
      const times: number[] = [];
      const tStartMs = performance.now();
      for await (const _ of seq.evaluate(ids, { temperature: 0 })) {
        times.push(performance.now());
        if (times.length >= TOKENS) break;
      }
      const m = requestMetrics({ tStartMs, tokenTimesMs: times, promptTokens: ids.length });
      return { promptTokens: m.promptTokens, ttftMs: m.ttftMs, prefillTokPerS: m.prefillTokPerS };
    },
    close: async () => {
      await context.dispose();
      await model.dispose();
    },
  };
}
