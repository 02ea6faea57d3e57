/**
 * Speculative decoding by lookup (GenerateRequest.draft) against the same runs without drafting, in one
 * headless Chromium (the real engine worker, src/cli/harness.ts), on one model and a few prompts: per
 * prompt, one warm-up of each (the verify step's kernels compile on first use), then `--runs` pairs,
 * alternating plain and lookup; each pair's greedy outputs must be identical (else the script fails).
 * Prints, and writes into BENCHMARKS.md between `<!-- bench:speculative DATE -->` markers, a table of
 * decode tok/s medians with and without, the ratio, the acceptance rate and the tokens per target pass.
 *
 *   npm run bench:speculative -- [--model PATH] [--runs 5] [--tokens 96] [--draft-max 8] [--no-write]
 *
 * Default model: stories260K (src/testing/models.ts).
 */
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { callHarness, withHarnessPage } from '../src/cli/harness-server.ts';
import { decodeTokPerS } from '../src/core/metrics.ts';
import type { GenerateRequest, GenerateResult, ModelInfo } from '../src/core/types.ts';
import { stories260kPath } from '../src/testing/models.ts';
import {
  type AdapterInfo,
  adapterRow,
  cpuModel,
  cpuRow,
  gitCommit,
  writeBenchSection,
} from './bench-common.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    runs: { type: 'string', default: '5' },
    tokens: { type: 'string', default: '96' },
    'draft-max': { type: 'string', default: '8' },
    'no-write': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(
    'npm run bench:speculative -- [--model PATH] [--runs 5] [--tokens 96] [--draft-max 8] [--no-write]',
  );
  process.exit(0);
}
const MODEL = resolve(values.model ?? stories260kPath());
const RUNS = Number(values.runs);
const TOKENS = Number(values.tokens);
const DRAFT_MAX = Number(values['draft-max']);

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
const rows: Row[] = await withHarnessPage({ modelPath: MODEL }, async (page, modelUrl) => {
  const info = await callHarness<ModelInfo>(page, 'load', modelUrl, 1024);
  adapter = await callHarness<AdapterInfo>(page, 'adapter');
  modelName = `${info.name} (${info.tensorTypes.join(', ')})`;
  const out: Row[] = [];
  for (const p of PROMPTS) {
    const base: GenerateRequest = { prompt: p.prompt, maxTokens: TOKENS, ignoreEos: true };
    const spec: GenerateRequest = { ...base, draft: { type: 'lookup', draftMax: DRAFT_MAX } };
    await callHarness(page, 'generate', base);
    await callHarness(page, 'generate', spec);
    const plain: number[] = [];
    const lookup: number[] = [];
    let drafted = 0;
    let accepted = 0;
    let passes = 0;
    let tokens = 0;
    let promptTokens = 0;
    for (let r = 0; r < RUNS; r++) {
      const a = await callHarness<GenerateResult>(page, 'generate', base);
      const b = await callHarness<GenerateResult>(page, 'generate', spec);
      if (JSON.stringify(a.outputTokenIds) !== JSON.stringify(b.outputTokenIds))
        throw new Error(`${p.name}: the lookup run's output differs from plain greedy's`);
      promptTokens = a.promptTokenIds.length;
      plain.push(decodeTokPerS({ ...a, promptTokens }));
      lookup.push(decodeTokPerS({ ...b, promptTokens }));
      const s = b.speculative!;
      drafted += s.drafted;
      accepted += s.accepted;
      passes += s.targetPasses;
      tokens += b.outputTokenIds.length - 1;
    }
    out.push({
      name: p.name,
      promptTokens,
      plain: median(plain),
      lookup: median(lookup),
      accepted,
      drafted,
      perPass: tokens / passes,
    });
    console.error(
      `${p.name}: plain ${plain.map((x) => x.toFixed(1))}, lookup ${lookup.map((x) => x.toFixed(1))}`,
    );
  }
  return out;
});

const date = new Date().toISOString().slice(0, 10);
const text = [
  `<!-- bench:speculative ${date} -->`,
  `### Speculative decoding by lookup, ${date}`,
  '',
  `\`npm run bench:speculative\` (commit ${gitCommit(['src', 'scripts'])}): ${modelName}, greedy, ${TOKENS} tokens with EOS ignored, draftMax ${DRAFT_MAX} (adaptive), ${RUNS} pairs of runs after one warm-up each, plain and lookup alternating in one headless Chromium; every pair's outputs identical. Decode tok/s = (tokens − 1) ÷ (last token − first token), medians.`,
  '',
  '| | |',
  '|---|---|',
  cpuRow(cpuModel(), cpus().length),
  adapterRow('headless Chromium', adapter),
  '',
  '| prompt | prompt tokens | decode tok/s plain | decode tok/s lookup | lookup ÷ plain | accepted / drafted | tokens per target pass |',
  '|---|---:|---:|---:|---:|---:|---:|',
  ...rows.map(
    (r) =>
      `| ${r.name} | ${r.promptTokens} | ${r.plain.toFixed(1)} | ${r.lookup.toFixed(1)} | ${(r.lookup / r.plain).toFixed(2)}× | ${r.accepted} / ${r.drafted} (${r.drafted ? ((100 * r.accepted) / r.drafted).toFixed(0) : 'n/a'}%) | ${r.perPass.toFixed(2)} |`,
  ),
  `<!-- /bench:speculative ${date} -->`,
].join('\n');
console.log(text);
if (!values['no-write']) writeBenchSection('speculative', date, text);
