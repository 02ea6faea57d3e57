// bench-prefill's parts in Chromium: 1 (prefill, every engine), 3 and 4 (ours' TTFT and stop), their prompts.
import { rmSync, statSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { callHarness, withHarnessPage } from '../src/cli/harness-server.ts';
import type { ModelInfo } from '../src/core/types.ts';
import type { AdapterInfo } from './bench-common.ts';
import {
  CHROMIUM,
  type EngineId,
  has,
  N_CTX,
  on,
  PP_TYPE,
  PROMPTS,
  runsFor,
  STOP_AFTER_MS,
  STOP_REPS,
  STOP_TOKENS,
  TTFT_TOKENS,
  TYPES,
  WLLAMA_N_BATCH,
  WLLAMA_N_UBATCH,
} from './bench-prefill-args.ts';
import { llamaCppRunner, oursRunner, type Runner, wllamaRunner } from './bench-prefill-engines.ts';
import { env, f, log, results, type StopToIdleResult, type TypeRow } from './bench-prefill-run.ts';

// ---------------------------------------------------------------------------------------------------
// Prompts: lower-case story words, sized in tokens with our tokenizer (BOS included).

const WORDS = (
  'once upon a time there was a little girl who had a red ball and a big dog ' +
  'she went to the park with her mom and saw a tall tree by the pond the sun was warm and the sky was blue ' +
  'her friend came to play and they ran and laughed all day then it was time to go home for dinner'
).split(' ');

/** A text of `target` tokens (BOS included) as `count` counts them, or the nearest below when none is exact. */
function promptOf(target: number, count: (text: string) => number): { text: string; tokens: number } {
  let a = 1;
  let state = 12345;
  const words: string[] = [];
  const textOf = (n: number) => {
    while (words.length < n) {
      // Mostly the story in order, with a pseudo-random word now and then so it never repeats exactly.
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      words.push(state % 7 === 0 ? WORDS[state % WORDS.length] : WORDS[words.length % WORDS.length]);
    }
    return words.slice(0, n).join(' ');
  };
  let b = target; // each word is at least one token, so `target` words are too many
  while (count(textOf(b)) <= target) b *= 2;
  while (b - a > 1) {
    const m = (a + b) >> 1;
    if (count(textOf(m)) <= target) a = m;
    else b = m;
  }
  const text = textOf(a);
  return { text, tokens: count(text) };
}

// ---------------------------------------------------------------------------------------------------
// Part 1 (+ 3 and 4 while Q4_0 is loaded): one Chromium, one Vite server for every file.

/**
 * Parts 1, 3 and 4 as `--parts` asks, in one Chromium: part 1 on each `--types` file of `files` (removed
 * when done, except {@link PP_TYPE}'s), then parts 3 and 4 on ours with Q4_0; `count` counts a text's
 * tokens with our tokenizer (BOS included). Fills {@link results} and {@link env}.
 */
export async function browserParts(files: Map<string, string>, count: (t: string) => number): Promise<void> {
  const first = [...files.values()][0];
  const prompts = has('prefill')
    ? PROMPTS.map((n) => {
        const p = promptOf(n, count);
        log(`prompt ~${n}: ${p.tokens} tokens (ours' tokenizer, BOS included)`);
        return { target: n, ...p };
      })
    : [];
  const warmText = promptOf(Math.min(...PROMPTS, 100), count).text;
  await withHarnessPage({ modelPath: first, chromium: CHROMIUM }, async (page, url0) => {
    const urlOf = (path: string) => `${new URL(url0).origin}/@fs${path}`;
    const browser = page.context().browser();
    env.chromium = browser?.version();
    let wp: Page | undefined;
    if (on('wllama') && has('prefill') && browser) {
      wp = await (await browser.newContext()).newPage();
      await wp.goto(`${new URL(url0).origin}/src/bench/wllama.html`);
      await wp.waitForFunction(() => document.body.dataset.ready === '1', undefined, { timeout: 60_000 });
    }
    const loadOurs = async (path: string) => {
      const info = await callHarness<ModelInfo>(page, 'load', urlOf(path), N_CTX);
      env.adapter ??= await callHarness<AdapterInfo | undefined>(page, 'adapter');
      // Fields of the cancellable-prefill engine (issue 16), absent from older ones.
      const more = info as unknown as { batchSize?: number; kernels?: { prefill?: unknown } };
      env.oursBatch = more.batchSize;
      env.oursPrefill = more.kernels?.prefill;
      return info;
    };
    const typesHere = has('prefill') ? TYPES : [];
    for (const type of typesHere) {
      const path = files.get(type)!;
      const row: TypeRow = { type, mib: statSync(path).size / 2 ** 20, prompts: [] };
      results.typeRows.push(row);
      for (const p of prompts) row.prompts.push({ target: p.target, tokens: p.tokens, cells: {} });
      const runners: Runner[] = [];
      const closers: (() => Promise<void>)[] = [];
      const cellOf = (pi: number, id: EngineId) => {
        const cells = row.prompts[pi].cells;
        cells[id] ??= { runs: [] };
        return cells[id];
      };
      try {
        log(`== ${type} (${row.mib.toFixed(1)} MiB): loading`);
        if (on('ours')) {
          await loadOurs(path);
          runners.push(oursRunner(page));
        }
        if (wp) {
          const info = await wp.evaluate(
            ([u, c, b, ub]) =>
              window.wllamaBench.load(u as string, {
                nCtx: c as number,
                nThreads: 1,
                nBatch: b as number,
                nUbatch: ub as number,
              }),
            [urlOf(path), N_CTX, WLLAMA_N_BATCH, WLLAMA_N_UBATCH] as const,
          );
          env.wllama = info;
          runners.push(wllamaRunner(wp));
        }
        if (on('llama-cpp')) {
          const l = await llamaCppRunner(path);
          closers.push(l.close);
          runners.push(l);
          for (const p of prompts)
            if (l.tokens(p.text) !== p.tokens)
              log(
                `⚠ llama.cpp tokenizes prompt ~${p.target} to ${l.tokens(p.text)} tokens, ours to ${p.tokens}`,
              );
        }
        // One warm-up per engine (shaders, JIT, buffers), on a 100-token prompt (or the shortest).
        const failed = new Set<EngineId>();
        const attempt = async (r: Runner, pi: number | undefined) => {
          try {
            const x = await r.run(pi === undefined ? warmText : prompts[pi].text);
            if (pi === undefined) log(`  ${r.id} warm-up: ${f(x.prefillTokPerS)} tok/s`);
            else {
              cellOf(pi, r.id).runs.push(x);
              log(
                `  ${r.id.padEnd(9)} ${String(x.promptTokens).padStart(5)} tok: TTFT ${f(x.ttftMs)} ms, ${f(x.prefillTokPerS)} tok/s${x.internalTokPerS ? ` (internal ${f(x.internalTokPerS)})` : ''}`,
              );
            }
          } catch (e) {
            // Keep going with the other engines; this one is done for this type.
            failed.add(r.id);
            const msg = (e as Error).message.split('\n')[0];
            for (let i = 0; i < prompts.length; i++)
              if (pi === undefined || i >= pi) cellOf(i, r.id).error ??= msg;
            log(
              `  ⚠ ${r.id} failed${pi === undefined ? ' in its warm-up' : ` on prompt ~${prompts[pi].target}`}: ${msg}`,
            );
          }
        };
        for (const r of runners) await attempt(r, undefined);
        const rounds = Math.max(...prompts.map((p) => runsFor(p.target)));
        for (let round = 0; round < rounds; round++) {
          const tr = performance.now();
          for (let pi = 0; pi < prompts.length; pi++) {
            if (round >= runsFor(prompts[pi].target)) continue;
            const live = runners.filter((r) => !failed.has(r.id));
            for (let k = 0; k < live.length; k++) await attempt(live[(k + round + pi) % live.length], pi);
          }
          log(`${type} round ${round + 1}/${rounds}: ${((performance.now() - tr) / 1000).toFixed(0)} s`);
        }
      } finally {
        for (const c of closers) await c().catch((e) => log(`cleanup: ${e}`));
      }
      if (type === PP_TYPE && on('ours')) await oursQ4Parts(page, null, count);
      if (type !== PP_TYPE) rmSync(path);
    }
    if (!typesHere.includes(PP_TYPE) && (has('ttft') || has('stop'))) {
      log(`== ${PP_TYPE}: loading ours for TTFT and Stop`);
      await loadOurs(files.get(PP_TYPE)!);
      await oursQ4Parts(page, warmText, count);
    }
  });
}

/**
 * Parts 3 and 4 on ours with Q4_0 loaded; `warmText`: a warm-up first (none when part 1 just ran); `count`
 * as {@link browserParts}'.
 */
async function oursQ4Parts(page: Page, warmText: string | null, count: (t: string) => number): Promise<void> {
  const ours = oursRunner(page);
  if (has('ttft')) {
    const text = promptOf(TTFT_TOKENS, count).text;
    const ttft: NonNullable<typeof results.ttft> = { tokens: 0, runs: [] };
    results.ttft = ttft;
    try {
      if (warmText !== null) await ours.run(warmText);
      for (let i = 0; i < runsFor(TTFT_TOKENS); i++) {
        const r = await ours.run(text);
        ttft.tokens = r.promptTokens;
        ttft.runs.push(r.ttftMs);
        log(`ours TTFT ${r.promptTokens} tokens: ${f(r.ttftMs)} ms (${f(r.prefillTokPerS)} tok/s)`);
      }
    } catch (e) {
      ttft.error = (e as Error).message.split('\n')[0];
      log(`⚠ ours TTFT failed: ${ttft.error}`);
    }
  }
  if (has('stop')) {
    try {
      for (let i = 0; i < STOP_REPS; i++) {
        const r = await callHarness<StopToIdleResult>(page, 'stopToIdle', {
          promptTokens: STOP_TOKENS,
          abortAfterMs: STOP_AFTER_MS,
          seed: 16 + i,
        });
        results.stops.push(r);
        log(
          `ours stop→idle (${r.promptTokens}-token prompt, abort at ${f(r.abortAtMs)} ms): ${r.stopToIdleMs === null ? 'ended before the abort' : `${f(r.stopToIdleMs)} ms`}, ${r.finishReason}, prefill ${r.prefill ? `${r.prefill.done}/${r.prefill.tokens} in ${r.prefill.batches} batches` : '?'}`,
        );
      }
    } catch (e) {
      results.stopError = (e as Error).message.split('\n')[0];
      log(`⚠ ours stop→idle failed: ${results.stopError}`);
    }
  }
}
