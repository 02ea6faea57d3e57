// bench-prefill's BENCHMARKS.md section: the environment, then a table per part run.
import {
  adapterRow,
  cpuRow,
  pkgVersion,
  BENCH_SEED as SEED,
  BENCH_SHAPE_ID as SHAPE_ID,
} from './bench-common.ts';
import {
  DEPTHS,
  type EngineId,
  has,
  LLAMA_BATCH,
  LONG_FROM,
  LONG_RUNS,
  MODEL_CTX,
  N_CTX,
  PP,
  PP_TYPE,
  PROMPTS,
  REPS,
  RUNS,
  STOP_AFTER_MS,
  STOP_REPS,
  STOP_TOKENS,
  TOKENS,
  TTFT_TOKENS,
  WLLAMA_N_BATCH,
  WLLAMA_N_UBATCH,
} from './bench-prefill-args.ts';
import { env, f, median, type PrefillResults, ratio, shape, tps } from './bench-prefill-run.ts';

/**
 * The section (`<!-- bench:prefill DATE -->` … `<!-- /bench:prefill DATE -->`) reporting `res`, for a
 * model of `nParams` parameters and a run of `wallS` seconds.
 */
export function section(res: PrefillResults, nParams: number, wallS: number): string {
  const { typeRows, ttft, stops, stopError, pp } = res;
  const date = env.date;
  const args = process.argv.slice(2);
  const cmd = `npm run bench:prefill${args.length ? ` -- ${args.join(' ')}` : ''}`;
  const longNote =
    LONG_RUNS !== RUNS && [...PROMPTS, has('ttft') ? TTFT_TOKENS : 0].some((n) => n >= LONG_FROM)
      ? `, ${LONG_RUNS} for prompts of ≥ ${LONG_FROM.toLocaleString('en-US')} tokens (to keep the run near 20 minutes: ours prefills ~1,500 tokens in about a minute here)`
      : '';
  const L = [
    `<!-- bench:prefill ${date} -->`,
    `## ${date}: prefill on a ${(nParams / 1e6).toFixed(0)}M-parameter llama (synthetic shape \`${SHAPE_ID}\`), ours vs wllama and llama.cpp`,
    '',
    `Recorded by \`${cmd}\` (scripts/bench-prefill.ts) in ${wallS.toFixed(0)} s, commit ${env.commit}. The model: seeded random weights (seed ${SEED}) in the shape \`${SHAPE_ID}\` (${shape.nEmbd} wide, ${shape.nLayers} layers, FFN ${shape.nFF}, ${shape.nHead} heads / ${shape.nHeadKv} KV heads, vocabulary ${shape.nVocab}; ${nParams.toLocaleString('en-US')} parameters; context_length ${MODEL_CTX}), written F32 by src/model/random-model.ts and quantized by our quantizer (byte-identical to llama-quantize); the same files for every engine.`,
    '',
    '| | |',
    '| --- | --- |',
    cpuRow(env.cpu, env.nCpu, {
      before: 'the run',
      loadBefore: env.loadBefore,
      after: 'it',
      loadAfter: env.loadAfter,
      note: "the 'after' figure counts this run too",
    }),
    adapterRow(
      `headless Chromium ${env.chromium ?? '?'}`,
      env.adapter,
      `${env.oursBatch ? `; prefill batches up to ${env.oursBatch} tokens` : ''}${env.oursPrefill ? `, prefill matmuls ${JSON.stringify(env.oursPrefill)}` : ''}`,
    ),
    `| Peers | wllama ${pkgVersion('@wllama/wllama')} (llama.cpp ${env.wllama?.libllama ?? '?'}, wasm, CPU) ${env.wllama?.threads ?? 1} thread in the same Chromium, n_ctx ${N_CTX}, n_batch ${WLLAMA_N_BATCH}, n_ubatch ${WLLAMA_N_UBATCH}; ${env.llamaCpp ?? `node-llama-cpp ${pkgVersion('node-llama-cpp')}`} (native CPU, \`getLlama({gpu: false, build: 'never'})\`) 1 thread, batch ${LLAMA_BATCH}, context ${N_CTX} |`,
    `| Protocol | text prompts of lower-case story words in the random model's vocabulary, sized with our tokenizer (token counts below include BOS; every engine's own count is checked), ${TOKENS} greedy output token${TOKENS === 1 ? '' : 's'} with EOS ignored, context ${N_CTX}; 1 warm-up per engine and type (a ${Math.min(100, ...PROMPTS)}-token prompt), then the median of ${RUNS} run${RUNS === 1 ? '' : 's'}${longNote}, engines interleaved (each round runs every engine once per prompt, the order rotated); prefill tok/s = prompt tokens ÷ TTFT (vLLM's definition), TTFT as the caller sees it (ours: the worker's clock; wllama: its page; llama.cpp: node-llama-cpp's generator) |`,
    '',
  ];
  if (typeRows.length) {
    L.push(
      'Goal (issue 16): ours ≥ 0.5× wllama prefill.',
      '',
      '| type | MiB | prompt tokens | ours tok/s | wllama tok/s | llama.cpp tok/s | ours÷wllama | ours÷llama.cpp | ≥ 0.5× wllama | ours TTFT ms | runs |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: | ---: | ---: |',
    );
    const notes: string[] = [];
    for (const row of typeRows)
      for (const p of row.prompts) {
        const med = (id: EngineId) => {
          const c = p.cells[id];
          return c?.runs.length ? median(c.runs.map((r) => r.prefillTokPerS)) : undefined;
        };
        const cell = (id: EngineId) => {
          const c = p.cells[id];
          if (!c) return '—';
          if (!c.runs.length) return c.error ? 'failed ⚠' : '—';
          return `${f(med(id))}${c.error ? ' ⚠' : ''}`;
        };
        const o = med('ours');
        const w = med('wllama');
        const goal = o !== undefined && w !== undefined ? (o >= 0.5 * w ? '✓' : '✗') : '—';
        const lens = new Set(Object.values(p.cells).flatMap((c) => c?.runs.map((r) => r.promptTokens) ?? []));
        const tokens = lens.size > 1 ? `${[...lens].join(' / ')} ⚠` : String([...lens][0] ?? p.tokens);
        const oursTtft = p.cells.ours?.runs.length
          ? median(p.cells.ours.runs.map((r) => r.ttftMs))
          : undefined;
        const nRuns = Math.max(0, ...Object.values(p.cells).map((c) => c?.runs.length ?? 0));
        L.push(
          `| ${row.type} | ${row.mib.toFixed(1)} | ${tokens} | ${cell('ours')} | ${cell('wllama')} | ${cell('llama-cpp')} | ${ratio(o, w)} | ${ratio(o, med('llama-cpp'))} | ${goal} | ${f(oursTtft)} | ${nRuns} |`,
        );
        if (lens.size > 1)
          notes.push(
            `- ⚠ ${row.type} prompt ~${p.target}: the engines counted different prompt lengths (${[...lens].join(', ')}).`,
          );
        for (const [id, c] of Object.entries(p.cells))
          if (c?.error) notes.push(`- ⚠ ${row.type} prompt ~${p.target} ${id}: ${c.error}.`);
      }
    L.push('');
    const internal = typeRows.flatMap((row) =>
      row.prompts
        .map((p) => {
          const rs = p.cells.wllama?.runs.filter((r) => r.internalTokPerS) ?? [];
          return rs.length ? `${row.type} ${p.tokens}: ${f(median(rs.map((r) => r.internalTokPerS!)))}` : '';
        })
        .filter(Boolean),
    );
    if (internal.length)
      L.push(
        `wllama's prefill by llama.cpp's own timings inside its worker (prompt_n ÷ prompt_ms, without the page ↔ worker round trips), medians: ${internal.join('; ')} tok/s.`,
        '',
      );
    if (notes.length) L.push(...notes, '');
  }
  if (has('pp')) {
    L.push(
      `### llama-bench pp${PP} (${PP_TYPE}, F16 KV cache)`,
      '',
      `Ours: \`npm run bench -- --llama-bench --n-prompt ${PP} --n-gen 0 --depth ${DEPTHS.join(',')} --reps ${REPS} --no-profile\` (headless Chromium, the page's code; the context raised to the deepest test's ${Math.max(...DEPTHS) + PP} tokens). llama.cpp: node-llama-cpp, 1 thread, context ${Math.max(...DEPTHS) + PP}, batch ${LLAMA_BATCH}, \`evaluateWithoutGeneratingNewTokens\` of ${PP} seeded random tokens. Both as llama-bench: the cache filled once to the depth, 1 warm-up, then ${REPS} repetition${REPS === 1 ? '' : 's'} at positions depth… (mean ± population std tok/s).${DEPTHS.includes(4096) ? '' : ` Depths ${DEPTHS.join(', ')}: issue 16 asks for 0 and 4096, but filling 4,096 positions and the pp${PP} runs there take ours about 8 minutes here (5 more than depth 1024), past this run's ~20-minute budget; \`--depths 0,4096\` measures it.`}`,
      '',
      '| test | ours tok/s | llama.cpp tok/s | ours÷llama.cpp |',
      '| --- | ---: | ---: | ---: |',
      ...DEPTHS.map((d) => {
        const name = d === 0 ? `pp${PP}` : `pp${PP} @ d${d}`;
        return `| ${name} | ${tps(pp.ours?.get(d))} | ${tps(pp.llama?.get(d))} | ${ratio(pp.ours?.get(d)?.mean, pp.llama?.get(d)?.mean)} |`;
      }),
      '',
    );
    if (pp.oursError) L.push(`- ⚠ ours: ${pp.oursError}.`, '');
    if (pp.llamaError) L.push(`- ⚠ llama.cpp: ${pp.llamaError}.`, '');
  }
  if (has('ttft') && ttft) {
    L.push(
      `### TTFT of a ${TTFT_TOKENS.toLocaleString('en-US')}-token prompt (ours, Chromium, ${PP_TYPE})`,
      '',
      '| prompt tokens | TTFT ms | prefill tok/s | runs |',
      '| ---: | ---: | ---: | ---: |',
      `| ${ttft.tokens || '—'} | ${f(median(ttft.runs))}${ttft.runs.length > 1 ? ` [${f(Math.min(...ttft.runs))}–${f(Math.max(...ttft.runs))}]` : ''} | ${f(ttft.tokens / (median(ttft.runs) / 1000))} | ${ttft.runs.length} |`,
      '',
    );
    if (ttft.error) L.push(`- ⚠ ${ttft.error}.`, '');
  }
  if (has('stop')) {
    const ms = stops.map((s) => s.stopToIdleMs).filter((x): x is number => x !== null);
    const batches = stops.map((s) => s.meanBatchMs).filter((x): x is number => x !== undefined);
    const med = median(ms);
    L.push(
      `### Stop to idle during a ${STOP_TOKENS.toLocaleString('en-US')}-token prefill (ours, Chromium, ${PP_TYPE})`,
      '',
      `Through the page (\`harness.stopToIdle\` → src/bench/stop-latency.ts \`measureStopToIdle\`): a generation of ${STOP_TOKENS} seeded pseudo-random prompt token ids, \`abort()\` on its signal ${STOP_AFTER_MS} ms after the request, timed on the page's clock to the request's promise settling (the engine idle); ${STOP_REPS === 1 ? 'once' : `${STOP_REPS} times`}. Goal (issue 16): under one prefill batch's time, < 250 ms here.`,
      '',
      '| runs | stop → idle ms, median [min–max] | aborted during prefill | prompt tokens done at the stop | mean ms per prefill batch | < 250 ms |',
      '| ---: | ---: | ---: | --- | ---: | :---: |',
      `| ${stops.length} | ${f(med)}${ms.length > 1 ? ` [${f(Math.min(...ms))}–${f(Math.max(...ms))}]` : ''} | ${stops.filter((s) => s.duringPrefill).length} of ${stops.length} | ${stops.map((s) => (s.prefill ? `${s.prefill.done}/${s.prefill.tokens} (${s.prefill.batches} batches)` : '?')).join(', ') || '—'} | ${f(median(batches))} | ${Number.isFinite(med) ? (med < 250 ? '✓' : '✗') : '—'} |`,
      '',
    );
    if (stopError) L.push(`- ⚠ ${stopError}.`, '');
  }
  if (L[L.length - 1] !== '') L.push('');
  L.push(`<!-- /bench:prefill ${date} -->`);
  return L.join('\n');
}
