/**
 * Writes `tests/golden/ppl.json`: llama.cpp's perplexity and teacher-forced top-1 tokens on the fixed
 * text `tests/data/ppl-story.txt`, for stories260K and for quantized copies of it made by our quantizer.
 *
 * Usage: `npm run golden:ppl` (node-llama-cpp's prebuilt CPU llama.cpp; runs in about a minute).
 *
 * Models (made in a temporary folder; only their sha256 is stored, tests make them again):
 * - `stories260K`: the shared F32 file, and `npm run quantize` of it to Q8_0, Q4_0, F16, BF16, Q6_K,
 *   Q4_K_M, Q4_1, Q5_0, Q5_1 and IQ4_NL. Its rows are 64 and 172 wide, so Q6_K and Q4_K_M hold no K-quant block at all (the engine
 *   fallback makes those tensors Q8_0 and F16; see quantize-model.ts); they are kept as files a user
 *   would make.
 * - `stories260K-wide`: stories260K widened to 256-wide rows (src/model/widen.ts, the same
 *   function in exact arithmetic), F32 and quantized to Q8_0, Q4_0, Q4_K (every matrix), Q4_K_M, Q6_K,
 *   F16, BF16, IQ4_XS, Q2_K, Q3_K_S, Q3_K_M, Q5_K_S, Q5_K_M: here every quantized matrix is in its nominal type
 *   (or its llama.cpp mix).
 *
 * Scoring, as `src/bench/perplexity.ts` does it (and as the engine's `scoreTokens` would): the text
 * tokenized by llama.cpp with BOS, windows from `perplexityWindows(ids, ctx, bos)`, each window
 * evaluated from an empty KV cache with `controlledEvaluate`, asking every position for its
 * probabilities and its greedy token. NLL = −ln p(next token), p being the f32 softmax over all logits
 * that node-llama-cpp computes (it exposes probabilities, not logits; see scripts/golden.ts); top-1 is
 * the greedy token (temperature 0, the argmax). ctx = 2048 (the whole text in one window) for every
 * model, and also ctx = 128 (15 windows) for the F32 stories260K, to check the windowing.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ControlledEvaluateInputItem,
  getLlama,
  getModuleVersion,
  type LlamaContextSequence,
  LlamaLogLevel,
  type Token,
} from 'node-llama-cpp';
import { perplexityOf, perplexityWindows } from '../src/bench/perplexity.ts';
import { type QuantizeFtype, quantizeGguf } from '../src/gguf/quantize-model.ts';
import { openGguf } from '../src/gguf/reader.ts';
import { WIDE_STORIES, widenLlamaGguf } from '../src/model/widen.ts';
import { stories260kPath } from '../src/testing/models.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const modelPath = process.env.GOLDEN_MODEL ?? stories260kPath();
const textPath = resolve(root, 'tests/data/ppl-story.txt');
const outPath = resolve(root, 'tests/golden/ppl.json');

/** Context (window) sizes: every model at CTX; the F32 stories260K also at CTX_SMALL. */
const CTX = 2048;
const CTX_SMALL = 128;
const STORIES_TYPES: QuantizeFtype[] = [
  'Q8_0',
  'Q4_0',
  'Q4_K_M',
  'Q6_K',
  'F16',
  'BF16',
  'Q4_1',
  'Q5_0',
  'Q5_1',
  'IQ4_NL',
];
const WIDE_TYPES: QuantizeFtype[] = [
  'IQ4_XS',
  'Q8_0',
  'Q4_0',
  'Q4_K',
  'Q4_K_M',
  'Q6_K',
  'F16',
  'BF16',
  'Q2_K',
  'Q3_K_S',
  'Q3_K_M',
  'Q5_K_S',
  'Q5_K_M',
];

function sha256(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

/** Per-position NLL of the next token and the greedy token, for one window from an empty cache. */
async function scoreWindow(
  seq: LlamaContextSequence,
  nVocab: number,
  ids: number[],
): Promise<{ nll: number[]; top1: number[] }> {
  await seq.clearHistory();
  const items: ControlledEvaluateInputItem[] = ids.map((t, i) =>
    i < ids.length - 1
      ? [t as Token, { generateNext: { token: true, probabilities: true, options: { temperature: 0 } } }]
      : (t as Token),
  );
  const res = await seq.controlledEvaluate(items);
  const nll: number[] = [];
  const top1: number[] = [];
  for (let i = 0; i < ids.length - 1; i++) {
    const next = res[i]?.next;
    const probs = next?.probabilities;
    if (next?.token == null || !probs || probs.size !== nVocab) throw new Error(`position ${i}: no result`);
    const p = probs.get(ids[i + 1] as Token);
    if (p === undefined || !(p > 0)) throw new Error(`position ${i}: p(${ids[i + 1]}) = ${p}`);
    nll.push(-Math.log(p));
    top1.push(next.token);
  }
  return { nll, top1 };
}

async function main(): Promise<void> {
  const text = readFileSync(textPath, 'utf8');
  const work = mkdtempSync(join(tmpdir(), 'golden-ppl-'));
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  try {
    // Make the models.
    const stories = new Uint8Array(readFileSync(modelPath));
    const wide = await widenLlamaGguf(await openGguf({ path: modelPath }), WIDE_STORIES);
    const variants: { model: string; type: string; bytes: Uint8Array }[] = [
      { model: 'stories260K', type: 'F32', bytes: stories },
    ];
    for (const t of STORIES_TYPES) {
      const { bytes } = await quantizeGguf(await openGguf({ path: modelPath }), t);
      variants.push({ model: 'stories260K', type: t, bytes });
    }
    variants.push({ model: 'stories260K-wide', type: 'F32', bytes: wide });
    for (const t of WIDE_TYPES) {
      const file = await openGguf({ blob: new Blob([wide as Uint8Array<ArrayBuffer>]) });
      const { bytes } = await quantizeGguf(file, t);
      variants.push({ model: 'stories260K-wide', type: t, bytes });
    }

    let ids: number[] | undefined;
    const runs = [];
    for (const v of variants) {
      const path = join(work, `${v.model}-${v.type}.gguf`);
      writeFileSync(path, v.bytes);
      const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
      const bos = model.tokens.bos;
      if (bos == null) throw new Error('no BOS');
      const nVocab = [...model.iterateAllTokens()].length;
      const these = [bos as number, ...model.tokenize(text, false)];
      if (ids && these.join() !== ids.join()) throw new Error(`${v.model} ${v.type} tokenizes differently`);
      ids = these;
      const context = await model.createContext({
        contextSize: CTX,
        batchSize: 512,
        sequences: 1,
        threads: 2,
        flashAttention: false,
        experimentalKvCacheKeyType: 'F32',
        experimentalKvCacheValueType: 'F32',
      });
      const seq = context.getSequence();
      const ctxs = v.model === 'stories260K' && v.type === 'F32' ? [CTX, CTX_SMALL] : [CTX];
      for (const ctx of ctxs) {
        const windows = perplexityWindows(ids, ctx, bos);
        const nll = new Array<number>(ids.length - 1);
        const top1 = new Array<number>(ids.length - 1);
        for (const w of windows) {
          const s = await scoreWindow(seq, nVocab, w.ids);
          for (let k = w.scoreFrom; k < w.ids.length - 1; k++) {
            nll[w.firstTarget - 1 + k - w.scoreFrom] = s.nll[k];
            top1[w.firstTarget - 1 + k - w.scoreFrom] = s.top1[k];
          }
        }
        const ppl = perplexityOf(nll);
        runs.push({
          model: v.model,
          type: v.type,
          fileSha256: sha256(v.bytes),
          ctx,
          windows: windows.length,
          perplexity: Number(ppl.toPrecision(10)),
          tokens: nll.length,
          top1,
        });
        console.log(
          `${v.model} ${v.type} ctx ${ctx}: perplexity ${ppl.toFixed(4)} over ${nll.length} tokens`,
        );
      }
      await context.dispose();
      await model.dispose();
    }

    const out = {
      about:
        'llama.cpp (CPU, node-llama-cpp) perplexity and teacher-forced top-1 tokens on tests/data/ppl-story.txt, for stories260K and our quantizations of it. Regenerate with `npm run golden:ppl`; see tests/golden/README.md.',
      generator: {
        script: 'scripts/golden-ppl.ts',
        nodeLlamaCpp: await getModuleVersion(),
        llamaCpp: llama.llamaCppRelease,
      },
      text: 'tests/data/ppl-story.txt',
      textSha256: sha256(new TextEncoder().encode(text)),
      notes: [
        'ids: BOS + llama_tokenize(text, add_special=false, parse_special=false).',
        'Windows as src/bench/perplexity.ts perplexityWindows(ids, ctx, bos); perplexity = exp(mean NLL of every token after BOS), NLL = -ln p from node-llama-cpp probabilities (f32 softmax of the logits).',
        'top1[i]: llama.cpp greedy token after ids[0..i] (teacher-forced), i.e. its prediction of ids[i+1].',
        'fileSha256: the GGUF our quantizer (npm run quantize, engine fallback) makes from stories260K, or from stories260K widened by widenLlamaGguf(WIDE_STORIES).',
      ],
      ids,
      runs,
    };
    writeFileSync(outPath, `${JSON.stringify(out, null, 2)}\n`);
    // The repository's formatter (Biome) owns the layout: it keeps arrays of numbers on few lines.
    const biome = spawnSync(resolve(root, 'node_modules/.bin/biome'), ['format', '--write', outPath], {
      stdio: 'inherit',
    });
    if (biome.status !== 0) throw new Error('biome format failed on the golden file');
    console.log(`wrote ${outPath}: ${runs.length} runs`);
  } finally {
    await llama.dispose();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
