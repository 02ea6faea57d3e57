/**
 * Speculative decoding (GenerateRequest.draft) against the same runs without drafting, in one headless
 * Chromium (the real engine worker, src/cli/harness.ts), on one target model and a few prompts: by
 * lookup, and with each draft model (default: the target's own Q8_0 and Q4_0 copies, made by the
 * project's quantizer into a temporary directory). Per drafting and prompt: one warm-up of each (the
 * verify step's kernels compile on first use), then `--runs` pairs, alternating plain and speculative;
 * each pair's greedy outputs must be identical (else the script fails). Prints, and writes into
 * BENCHMARKS.md between `<!-- bench:speculative DATE -->` markers, a table of decode tok/s medians with
 * and without, the ratio, the acceptance rate and the tokens per target pass.
 *
 *   npm run bench:speculative -- [--model PATH | --bench-60m TYPE] [--draft PATH …] [--runs 5]
 *     [--tokens 96] [--draft-max N] [--no-write]
 *
 * Default model: stories260K (src/testing/models.ts). `--bench-60m TYPE`: the 60M-parameter random test
 * model (scripts/bench-common.ts `writeBenchModel`, quantized to TYPE by our quantizer) as the target,
 * and as its default draft a small random model with the same vocabulary (2 layers, 128 wide; seed 61). `--draft-max` default: the engine's (8 for lookup,
 * 4 for a draft model).
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { callHarness, withHarnessPage } from '../src/cli/harness-server.ts';
import { decodeTokPerS } from '../src/core/metrics.ts';
import type { DraftOptions, GenerateRequest, GenerateResult, ModelInfo } from '../src/core/types.ts';
import { quantizeGguf } from '../src/gguf/quantize-model.ts';
import { openGguf } from '../src/gguf/reader.ts';
import { makeRandomLlamaGguf } from '../src/model/random-model.ts';
import { stories260kPath } from '../src/testing/models.ts';
import {
  type AdapterInfo,
  adapterRow,
  benchModelFile,
  benchScratch,
  benchShape,
  cpuModel,
  cpuRow,
  gitCommit,
  writeBenchModel,
  writeBenchSection,
} from './bench-common.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    runs: { type: 'string', default: '5' },
    tokens: { type: 'string', default: '96' },
    'draft-max': { type: 'string' },
    draft: { type: 'string', multiple: true },
    'bench-60m': { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(
    'npm run bench:speculative -- [--model PATH | --bench-60m TYPE] [--draft PATH …] [--runs 5] [--tokens 96] [--draft-max N] [--no-write]',
  );
  process.exit(0);
}
let MODEL = resolve(values.model ?? stories260kPath());
const RUNS = Number(values.runs);
const TOKENS = Number(values.tokens);
const DRAFT_MAX = values['draft-max'] === undefined ? undefined : Number(values['draft-max']);
const scratch = benchScratch('bench-speculative-');
let drafts: string[];
try {
  drafts = values.draft?.map((d) => resolve(d)) ?? [];
  if (values['bench-60m']) {
    const m = await writeBenchModel(scratch.dir, 1024);
    MODEL = await benchModelFile(m, values['bench-60m']);
    const shape = benchShape();
    if (!values.draft) {
      const small = join(scratch.dir, 'bench-60m-draft-F32.gguf');
      writeFileSync(
        small,
        makeRandomLlamaGguf({
          seed: 61,
          name: 'bench-60m-draft',
          nLayers: 2,
          nEmbd: 128,
          nFF: 384,
          nHead: 4,
          nHeadKv: 4,
          nVocab: shape.nVocab,
          contextLength: 1024,
          weightType: 'F32',
        }),
      );
      drafts.push(small);
    }
  } else if (!values.draft) {
    const src = await openGguf({ path: MODEL });
    for (const type of ['Q8_0', 'Q4_0'] as const) {
      const file = join(scratch.dir, `${basename(MODEL, '.gguf')}-${type}.gguf`);
      writeFileSync(file, (await quantizeGguf(src, type)).bytes);
      drafts.push(file);
    }
  }
} catch (e) {
  scratch.cleanUp();
  throw e;
}

/** A summarising prompt (the answer repeats the text) and a plain story start (little to look up). */
const PROMPTS: { name: string; prompt: string }[] = [
  {
    name: 'summarise a story',
    prompt:
      'Lily had a red ball. She liked to play with the red ball in the park. One day, the red ball went ' +
      'into the pond. Lily was sad. Her friend Tom came and got the red ball out of the pond. Lily was ' +
      'happy and said thank you to Tom. Lily and Tom played with the red ball in the park.\n' +
      'Tell the story again: Lily had a red ball.',
  },
  { name: 'story start', prompt: 'Once upon a time' },
];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

interface Row {
  drafting: string;
  name: string;
  promptTokens: number;
  plain: number;
  lookup: number;
  accepted: number;
  drafted: number;
  perPass: number;
}

let adapter: AdapterInfo | undefined;
let modelName = '';
/** Each way of drafting: lookup, then each draft model (loaded beside the target). */
const draftings: { name: string; draftPath?: string; draft: DraftOptions }[] = [
  { name: 'lookup', draft: { type: 'lookup' } },
  ...drafts.map((d) => ({
    name: `draft ${basename(d)}`,
    draftPath: d,
    draft: { type: 'model' } as DraftOptions,
  })),
];
const rows: Row[] = [];
/** The machine's 1/5/15-minute load averages (`uptime`'s) before the runs: a shared machine's load skews them. */
const loadBefore = loadavg();
try {
  await withHarnessPage({ modelPath: MODEL, otherPaths: drafts }, async (page, modelUrl, urlOf) => {
    for (const d of draftings) {
      const info = await callHarness<ModelInfo>(
        page,
        'load',
        modelUrl,
        1024,
        undefined,
        undefined,
        d.draftPath && urlOf(d.draftPath),
      );
      adapter ??= await callHarness<AdapterInfo>(page, 'adapter');
      modelName ||= `${info.name} (${info.tensorTypes.join(', ')})`;
      for (const p of PROMPTS) {
        const base: GenerateRequest = { prompt: p.prompt, maxTokens: TOKENS, ignoreEos: true };
        const spec: GenerateRequest = {
          ...base,
          draft: { ...d.draft, ...(DRAFT_MAX !== undefined ? { draftMax: DRAFT_MAX } : {}) },
        };
        await callHarness(page, 'generate', base);
        await callHarness(page, 'generate', spec);
        const plain: number[] = [];
        const sped: number[] = [];
        let drafted = 0;
        let accepted = 0;
        let passes = 0;
        let tokens = 0;
        let promptTokens = 0;
        for (let r = 0; r < RUNS; r++) {
          const a = await callHarness<GenerateResult>(page, 'generate', base);
          const b = await callHarness<GenerateResult>(page, 'generate', spec);
          if (JSON.stringify(a.outputTokenIds) !== JSON.stringify(b.outputTokenIds))
            throw new Error(`${d.name}, ${p.name}: the speculative run's output differs from plain greedy's`);
          promptTokens = a.promptTokenIds.length;
          plain.push(decodeTokPerS({ ...a, promptTokens }));
          sped.push(decodeTokPerS({ ...b, promptTokens }));
          const s = b.speculative!;
          drafted += s.drafted;
          accepted += s.accepted;
          passes += s.targetPasses;
          tokens += b.outputTokenIds.length - 1;
        }
        rows.push({
          drafting: d.name,
          name: p.name,
          promptTokens,
          plain: median(plain),
          lookup: median(sped),
          accepted,
          drafted,
          perPass: tokens / passes,
        });
        console.error(
          `${d.name}, ${p.name}: plain ${plain.map((x) => x.toFixed(1))}, speculative ${sped.map((x) => x.toFixed(1))}`,
        );
      }
    }
  });
} finally {
  scratch.cleanUp();
}

const date = new Date().toISOString().slice(0, 10);
const loadAfter = loadavg();
const fmtLoad = (l: number[]) => l.map((x) => x.toFixed(2)).join(', ');
/** One section per target kind a day: stories260K (or --model) and the 60M model. */
const TAG = values['bench-60m'] ? 'speculative-60m' : 'speculative';
const text = [
  `<!-- bench:${TAG} ${date} -->`,
  `### Speculative decoding, ${modelName}, ${date}`,
  '',
  `\`npm run bench:speculative\` (commit ${gitCommit(['src', 'scripts'])}): ${modelName}, greedy, ${TOKENS} tokens with EOS ignored, draftMax ${DRAFT_MAX ?? 'the default (8 lookup, 4 draft model)'} (adaptive), ${RUNS} pairs of runs after one warm-up each, plain and speculative alternating in one headless Chromium; every pair's outputs identical. Draft models: ${drafts.map((d) => basename(d)).join(', ') || 'none'}. Decode tok/s = (tokens − 1) ÷ (last token − first token), medians. Load average (\`uptime\`: 1, 5, 15 min) ${fmtLoad(loadBefore)} before the runs, ${fmtLoad(loadAfter)} after.`,
  '',
  '| | |',
  '|---|---|',
  cpuRow(cpuModel(), cpus().length),
  adapterRow('headless Chromium', adapter),
  '',
  '| drafting | prompt | prompt tokens | decode tok/s plain | decode tok/s speculative | speculative ÷ plain | accepted / drafted | tokens per target pass |',
  '|---|---|---:|---:|---:|---:|---:|---:|',
  ...rows.map(
    (r) =>
      `| ${r.drafting} | ${r.name} | ${r.promptTokens} | ${r.plain.toFixed(1)} | ${r.lookup.toFixed(1)} | ${(r.lookup / r.plain).toFixed(2)}× | ${r.accepted} / ${r.drafted}${r.drafted ? ` (${((100 * r.accepted) / r.drafted).toFixed(0)}%)` : ''} | ${r.perPass.toFixed(2)} |`,
  ),
  `<!-- /bench:${TAG} ${date} -->`,
].join('\n');
console.log(text);
if (!values['no-write']) writeBenchSection(TAG, date, text);
