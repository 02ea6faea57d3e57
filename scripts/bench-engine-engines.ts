// bench-engine's engines: each loads the model and returns ready configurations (and how to free them).
import { cpus } from 'node:os';
import type { Token } from 'node-llama-cpp';
import type { Browser, Page } from 'playwright-core';
import type { WllamaRun } from '../src/bench/wllama-page.ts';
import { setupNodeVulkan } from '../src/cli/node-gpu.ts';
import { tokenTimesFromChunks } from '../src/core/metrics.ts';
import type { EngineStats, GenerateResult } from '../src/core/types.ts';
import { openModelSource } from '../src/library/opener.ts';
import { pkgVersion } from './bench-common.ts';
import { type AdapterInfo, type Config, type Env, log, N_CTX, type RunOnce } from './bench-engine-measure.ts';

/** Ours in Chromium: loads the file into the page's engine worker (`window.harness`). */
export async function oursBrowser(page: Page, modelUrl: string, env: Env): Promise<Config> {
  log('ours (Chromium, engine worker): loading');
  await page.evaluate(([u, c]) => window.harness.load(u as string, c as number), [modelUrl, N_CTX] as const);
  env.browserAdapter = (await page.evaluate(() => window.harness.adapter())) as AdapterInfo | undefined;
  const runOnce: RunOnce = async (prompt, n) => {
    const r: GenerateResult = await page.evaluate((req) => window.harness.generate(req), {
      prompt,
      maxTokens: n,
      ignoreEos: true,
      temperature: 0,
    });
    return {
      tStartMs: r.tStartMs,
      tokenTimesMs: r.tokenTimesMs,
      promptTokens: r.promptTokenIds.length,
      outputTokenIds: r.outputTokenIds,
      text: r.text,
    };
  };
  const runtime = `Chromium ${env.chromium ?? ''}`.trim();
  return {
    meta: { id: 'ours-browser', engine: 'ours (WebGPU, engine worker)', runtime, threads: '—' },
    runOnce,
  };
}

/** wllama, 1 thread, on its own page (src/bench/wllama.html) in the same Chromium, the same file. */
export async function wllamaBrowser(
  browser: Browser,
  modelUrl: string,
  env: Env,
): Promise<Config & { close(): Promise<void> }> {
  log('wllama (Chromium, wasm, CPU): loading');
  const ctx = await browser.newContext();
  const wp = await ctx.newPage();
  await wp.goto(`${new URL(modelUrl).origin}/src/bench/wllama.html`);
  await wp.waitForFunction(() => document.body.dataset.ready === '1', undefined, { timeout: 60_000 });
  const info = await wp.evaluate(
    ([u, c]) => window.wllamaBench.load(u as string, { nCtx: c as number, nThreads: 1 }),
    [modelUrl, N_CTX] as const,
  );
  env.wllama = info;
  const runOnce: RunOnce = async (prompt, n) => {
    const r: WllamaRun = await wp.evaluate(([p, k]) => window.wllamaBench.run(p as string, k as number), [
      prompt,
      n,
    ] as const);
    if (r.cachedTokens !== 0) throw new Error(`wllama reused ${r.cachedTokens} cached prompt tokens`);
    // One token per token chunk; tokens whose text was held back are counted at the final chunk.
    const tokenChunks = r.isTokenChunk.filter(Boolean).length;
    if (tokenChunks > r.completionTokens)
      throw new Error(`wllama sent ${tokenChunks} token chunks for ${r.completionTokens} tokens`);
    const counts = r.isTokenChunk.map((t) => (t ? 1 : 0));
    counts[counts.length - 1] += r.completionTokens - tokenChunks;
    const t = r.timings;
    return {
      tStartMs: r.tStartMs,
      tokenTimesMs: tokenTimesFromChunks(r.chunkTimesMs, counts),
      promptTokens: r.promptTokens,
      text: r.text,
      internal: t
        ? {
            prefillTokPerS: (t.prompt_n * 1000) / t.prompt_ms,
            decodeTokPerS: ((t.predicted_n - 1) * 1000) / t.predicted_ms,
          }
        : undefined,
    };
  };
  return {
    meta: {
      id: 'wllama',
      engine: `wllama ${pkgVersion('@wllama/wllama')} (llama.cpp ${info.libllama}, wasm, CPU)`,
      runtime: `Chromium ${env.chromium ?? ''}`.trim(),
      threads: `${info.threads}${info.multithread ? ' (multi-thread build)' : ' (single-thread)'}`,
    },
    runOnce,
    close: () => ctx.close(),
  };
}

/**
 * Our wllama backend (src/wllama/engine.ts: the `Engine` interface over the same wllama), 1 thread, on the
 * wllama page in the same Chromium: what `backend: 'auto'` gives a visitor without a GPU, beside the raw
 * wllama peer, to show what the adapter costs.
 */
export async function wllamaEngineBrowser(
  browser: Browser,
  modelUrl: string,
  env: Env,
): Promise<Config & { close(): Promise<void> }> {
  log('wllama backend (Chromium, WllamaEngine, CPU): loading');
  const ctx = await browser.newContext();
  const wp = await ctx.newPage();
  await wp.goto(`${new URL(modelUrl).origin}/src/bench/wllama.html`);
  await wp.waitForFunction(() => document.body.dataset.ready === '1', undefined, { timeout: 60_000 });
  const info = await wp.evaluate(([u, c]) => window.wllamaBench.engineLoad(u as string, c as number), [
    modelUrl,
    N_CTX,
  ] as const);
  const runOnce: RunOnce = async (prompt, n) => {
    const r: GenerateResult & { stats: EngineStats } = await wp.evaluate(
      ([p, k]) => window.wllamaBench.engineRun(p as string, k as number),
      [prompt, n] as const,
    );
    // llama.cpp's own timings of this request (stats(): llama-server's timings), as for the raw peer, so
    // the report separates what happens inside wllama from what the adapter adds around it.
    const pre = r.stats.lastPrefill;
    const dec = r.stats.lastDecode;
    return {
      tStartMs: r.tStartMs,
      tokenTimesMs: r.tokenTimesMs,
      promptTokens: r.promptTokenIds.length,
      outputTokenIds: r.outputTokenIds,
      text: r.text,
      internal:
        pre && dec
          ? {
              prefillTokPerS: (pre.tokens * 1000) / pre.ms,
              decodeTokPerS: ((dec.tokens - 1) * 1000) / dec.ms,
            }
          : undefined,
    };
  };
  return {
    meta: {
      id: 'wllama-engine',
      engine: `our wllama backend (WllamaEngine over wllama ${pkgVersion('@wllama/wllama')}, CPU)`,
      runtime: `Chromium ${env.chromium ?? ''}`.trim(),
      threads: `${info.threads?.count ?? '?'}${info.threads?.multithread ? ' (multi-thread build)' : ' (single-thread)'}`,
    },
    runOnce,
    close: () => ctx.close(),
  };
}

/** Ours in this Node process through Dawn (the `webgpu` package; sets VK_ICD_FILENAMES first). */
export async function oursNode(modelPath: string, env: Env): Promise<Config & { close(): Promise<void> }> {
  setupNodeVulkan();
  const { WebGpuEngine } = await import('../src/webgpu/engine.ts');
  const engine = new WebGpuEngine({ openModel: openModelSource });
  log('ours (Node, Dawn): loading');
  await engine.load({ path: modelPath }, { contextLength: N_CTX });
  env.nodeAdapter = engine.gpuContext?.info;
  const runOnce: RunOnce = async (prompt, n) => {
    const r = await engine.generate({ prompt, maxTokens: n, ignoreEos: true, temperature: 0 });
    return {
      tStartMs: r.tStartMs,
      tokenTimesMs: r.tokenTimesMs,
      promptTokens: r.promptTokenIds.length,
      outputTokenIds: r.outputTokenIds,
      text: r.text,
    };
  };
  return {
    meta: {
      id: 'ours-node',
      engine: 'ours (WebGPU)',
      runtime: `Node ${process.versions.node}, webgpu ${pkgVersion('webgpu')} (Dawn)`,
      threads: '—',
    },
    runOnce,
    close: () => engine.dispose(),
  };
}

/** node-llama-cpp with 1 thread, its default thread count, and one thread per core when that is neither. */
export async function llamaCpp(
  modelPath: string,
  env: Env,
): Promise<{ configs: Config[]; close(): Promise<void> }> {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const rel = llama.llamaCppRelease;
  env.llamaCpp = { release: rel.release, cpuMathCores: llama.cpuMathCores, maxThreads: llama.maxThreads };
  const model = await llama.loadModel({ modelPath });
  const contexts: { dispose(): Promise<void> }[] = [];
  const configs: Config[] = [];
  const settings: (number | undefined)[] = [1, undefined];
  for (const threads of settings) {
    const context = await model.createContext({ contextSize: N_CTX, sequences: 1, threads });
    contexts.push(context);
    const actual = context.currentThreads;
    if (threads === undefined && actual !== cpus().length && !settings.includes(cpus().length))
      settings.push(cpus().length);
    const seq = context.getSequence();
    log(`node-llama-cpp, ${threads === undefined ? 'default' : threads} thread(s) → ${actual}`);
    const runOnce: RunOnce = async (prompt, n, deadlineMs) => {
      const ids = [model.tokens.bos!, ...model.tokenize(prompt)];
      await seq.clearHistory();
      const times: number[] = [];
      const outIds: Token[] = [];
      const tStartMs = performance.now();
      for await (const tok of seq.evaluate(ids, { temperature: 0 })) {
        times.push(performance.now());
        outIds.push(tok);
        if (outIds.length >= n) break;
        if (deadlineMs !== undefined && performance.now() > deadlineMs) break;
      }
      return {
        tStartMs,
        tokenTimesMs: times,
        promptTokens: ids.length,
        outputTokenIds: outIds,
        text: model.detokenize(outIds),
        cut: outIds.length < n,
      };
    };
    configs.push({
      meta: {
        id: threads === undefined ? 'llama-cpp-default' : `llama-cpp-${threads}t`,
        engine: `node-llama-cpp ${pkgVersion('node-llama-cpp')} (llama.cpp tag ${rel.release}, native CPU)`,
        runtime: `Node ${process.versions.node}`,
        threads: threads === undefined ? `default (${actual})` : String(actual),
      },
      runOnce,
    });
  }
  return {
    configs,
    close: async () => {
      for (const c of contexts) await c.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}
