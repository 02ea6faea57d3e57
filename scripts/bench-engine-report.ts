// bench-engine's BENCHMARKS.md section: the environment, the results table, ratios, all statistics and notes.
import type { Summary } from '../src/core/metrics.ts';
import { pkgVersion } from './bench-common.ts';
import {
  type AdapterInfo,
  type Env,
  fmt,
  type Measured,
  N_CTX,
  type Opts,
  PROMPTS,
  type PromptKey,
} from './bench-engine-measure.ts';

/** `median [min–max]`, or a dash when there are no values. */
function medRange(s: Summary): string {
  return s.n === 0 ? '—' : `${fmt(s.median)} [${fmt(s.min)}–${fmt(s.max)}]`;
}

/** The adapter's vendor / architecture / device / description, flagged when it is a software one. */
function adapterText(a: AdapterInfo | undefined): string {
  if (!a) return 'unknown';
  const parts = [a.vendor, a.architecture, a.device, a.description].filter((s) => s && s.length > 0);
  const soft = a.isFallback || /swiftshader/i.test(parts.join(' '));
  return `${parts.join(' / ') || '(empty adapter info)'}${a.isFallback ? ', isFallbackAdapter' : ''}${soft ? ' — **software adapter (SwiftShader, runs on the CPU): not GPU figures**' : ''}`;
}

/** Length of the common prefix of two id lists. */
function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/**
 * The section (`<!-- bench:engine DATE -->` … `<!-- /bench:engine DATE -->`) reporting `all` with the
 * run's `env` and options `o`; `cmd` is the command line and `wallS` the run's seconds.
 */
export function report(all: Measured[], env: Env, o: Opts, cmd: string, wallS: number): string {
  const L: string[] = [];
  const title = `## ${env.date}: stories260K, our engine vs wllama and node-llama-cpp`;
  L.push(`<!-- bench:engine ${env.date} -->`, title, '');
  L.push(
    `Recorded by \`${cmd}\` (scripts/bench-engine.ts) in ${wallS.toFixed(0)} s, commit ${env.commit}.`,
    '',
  );
  L.push('| | |', '| --- | --- |');
  L.push(
    `| CPU | ${env.cpu}, ${env.nCpu} logical CPUs (load average 1/5/15 min before the run: ${env.loadBefore.map((x) => x.toFixed(2)).join(', ')}; after: ${env.loadAfter?.map((x) => x.toFixed(2)).join(', ') ?? '?'}; the 'after' figure counts this run's own threads too; other developers' processes shared the machine) |`,
  );
  if (env.chromium)
    L.push(`| Chromium | ${env.chromium}, headless, launched by src/cli/harness-server.ts (no GPU flags) |`);
  if (env.browserAdapter)
    L.push(`| WebGPU adapter in Chromium (ours) | ${adapterText(env.browserAdapter)} |`);
  if (env.nodeAdapter) L.push(`| WebGPU adapter in Node (ours) | ${adapterText(env.nodeAdapter)} |`);
  if (env.wllama)
    L.push(
      `| wllama | @wllama/wllama ${pkgVersion('@wllama/wllama')}, llama.cpp ${env.wllama.libllama}, wasm from node_modules served by Vite, \`n_gpu_layers: 0\` (CPU), ${env.wllama.multithread ? 'multi-thread' : 'single-thread'} (${env.wllama.threads} thread; page cross-origin isolated: ${env.wllama.crossOriginIsolated}) |`,
    );
  if (env.llamaCpp)
    L.push(
      `| node-llama-cpp | ${pkgVersion('node-llama-cpp')}, llama.cpp release tag ${env.llamaCpp.release} (as node-llama-cpp records it), prebuilt CPU binary (\`getLlama({gpu: false, build: 'never'})\`); cpuMathCores ${env.llamaCpp.cpuMathCores}, maxThreads ${env.llamaCpp.maxThreads} |`,
    );
  L.push(
    `| Protocol | same text prompts with BOS (short: ${JSON.stringify(PROMPTS.short)}; long: the ${all.find((m) => m.prompt === 'long')?.promptTokens ?? '?'}-token story opening in scripts/bench-engine-measure.ts), greedy, exactly ${o.tokens} output tokens with EOS ignored, context ${N_CTX}, ${o.warmup} warm-up + ${o.runs} measured runs per engine and prompt, warm-ups first, then the measured runs interleaved (each round runs every engine and prompt once, the order rotated each round, so background load falls on all alike) |`,
  );
  L.push(
    '| Metrics | vLLM `bench serve`: TTFT = request start → first token; prefill tok/s = prompt tokens / TTFT; decode tok/s = (output tokens − 1) / (E2E − TTFT); TPOT = (E2E − TTFT) / (output tokens − 1). Timestamps where the token id becomes known to the caller: ours in the worker (Chromium) or process (Node); wllama on its page as each streamed chunk arrives; node-llama-cpp as its `evaluate` generator yields |',
  );
  L.push('');
  L.push('Median over the measured runs, [min–max] beside it.', '');
  L.push(
    '| engine | runtime | threads | prompt tokens | prefill tok/s | decode tok/s | TTFT ms | TPOT ms | E2E ms | runs × tokens |',
  );
  L.push('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const p of Object.keys(PROMPTS) as PromptKey[]) {
    for (const m of all.filter((x) => x.prompt === p)) {
      L.push(
        `| ${m.engine} | ${m.runtime} | ${m.threads} | ${m.promptTokens} | ${medRange(m.prefill)} | ${medRange(m.decode)} | ${fmt(m.ttft.median)} | ${fmt(m.tpot.median)} | ${fmt(m.e2e.median)} | ${m.metrics.length} × ${m.metrics.every((x) => x.outputTokens === m.outputTokens) ? m.outputTokens : `≤${m.outputTokens}`}${m.reduced ? ' ⚠' : ''} |`,
      );
    }
  }
  L.push('');

  // Ratios: ours ÷ peer, medians.
  const ours = (id: string, p: PromptKey) => all.find((m) => m.id === id && m.prompt === p);
  const peers = all.filter((m) => !m.id.startsWith('ours-'));
  if (peers.length && (ours('ours-browser', 'short') || ours('ours-node', 'short'))) {
    L.push('Ratios of medians, ours ÷ peer (above 1: ours is faster).', '');
    L.push(
      '| prompt | peer | threads | prefill: ours Chromium ÷ peer | prefill: ours Node ÷ peer | decode: ours Chromium ÷ peer | decode: ours Node ÷ peer |',
    );
    L.push('| --- | --- | --- | ---: | ---: | ---: | ---: |');
    const r = (a: number | undefined, b: number) => {
      const x = a === undefined ? Number.NaN : a / b;
      return Number.isFinite(x) ? `${fmt(x)}×` : '—';
    };
    for (const p of Object.keys(PROMPTS) as PromptKey[]) {
      const ob = ours('ours-browser', p);
      const on = ours('ours-node', p);
      for (const m of peers.filter((x) => x.prompt === p)) {
        const label =
          m.id === 'wllama'
            ? 'wllama (Chromium)'
            : m.id === 'wllama-engine'
              ? 'our wllama backend (Chromium)'
              : 'node-llama-cpp';
        const name = `${label}${m.reduced ? ' ⚠' : ''}`;
        L.push(
          `| ${p} (${m.promptTokens}) | ${name} | ${m.threads} | ${r(ob?.prefill.median, m.prefill.median)} | ${r(on?.prefill.median, m.prefill.median)} | ${r(ob?.decode.median, m.decode.median)} | ${r(on?.decode.median, m.decode.median)} |`,
        );
      }
    }
    L.push('');
  }

  L.push('<details><summary>All statistics (tok/s: mean, median, p90, p99, population std)</summary>', '');
  L.push(
    "Percentiles interpolate linearly between closest ranks (NumPy's default), std has ddof = 0 (src/core/metrics.ts).",
    '',
  );
  L.push(
    '| engine | threads | prompt | prefill mean | median | p90 | p99 | std | decode mean | median | p90 | p99 | std |',
  );
  L.push('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const s5 = (s: Summary) => [s.mean, s.median, s.p90, s.p99, s.std].map(fmt).join(' | ');
  for (const m of all)
    L.push(`| ${m.id} | ${m.threads} | ${m.prompt} | ${s5(m.prefill)} | ${s5(m.decode)} |`);
  L.push('', '</details>', '');

  L.push('Notes:', '');
  const w = all.filter((m) => m.internal);
  for (const m of w) {
    L.push(
      `- ${m.id} ${m.prompt}: llama.cpp's own timings give prefill ${fmt(m.internal!.prefill.median)} (its prompt_ms: inside the worker, no page ↔ worker round trips) and decode ${fmt(m.internal!.decode.median)} tok/s (its predicted_ms: wall time from the first token to the last, the round trips between wllama's polls included) (medians); the table's figures are what a page sees.`,
    );
  }
  for (const m of all.filter((x) => x.reduced)) L.push(`- ⚠ ${m.id} ${m.prompt}: ${m.reduced}.`);
  // Agreement of greedy outputs with llama.cpp (node-llama-cpp, 1 thread).
  for (const p of Object.keys(PROMPTS) as PromptKey[]) {
    const ref = all.find((m) => m.id === 'llama-cpp-1t' && m.prompt === p)?.lastRun.outputTokenIds;
    if (!ref) continue;
    for (const id of ['ours-browser', 'ours-node']) {
      const m = ours(id, p);
      if (m?.lastRun.outputTokenIds)
        L.push(
          `- ${id} ${p}: the first ${commonPrefix(m.lastRun.outputTokenIds, ref)} of ${ref.length} greedy output ids equal llama.cpp's (node-llama-cpp, 1 thread).`,
        );
    }
  }
  for (const p of Object.keys(PROMPTS) as PromptKey[]) {
    const wt = all.find((m) => m.id === 'wllama' && m.prompt === p)?.lastRun.text;
    const ot = ours('ours-browser', p)?.lastRun.text;
    if (wt === undefined || ot === undefined) continue;
    let k = 0;
    while (k < wt.length && k < ot.length && wt[k] === ot[k]) k++;
    L.push(
      `- wllama ${p}: its text and ours (Chromium) agree on the first ${k} of ${Math.max(wt.length, ot.length)} characters.`,
    );
  }
  L.push(
    '- llama.cpp with `ignore_eos` (wllama) masks EOS out of the sampler, while ours and node-llama-cpp feed an argmax EOS back and continue, so their texts may differ after an EOS; the work per token is the same.',
  );
  L.push(`<!-- /bench:engine ${env.date} -->`);
  return L.join('\n');
}
