/**
 * `npm run bench:sampler [-- --models PATH,… --tokens 24 --rounds 4 --no-write]`: sampled decode with the
 * GPU sampler's passes chosen per request (issue 40: kernels/sample.ts `selectSamplePasses`) against every
 * planned pass encoded (the path before; `LlamaModel.startSampling(…, 'all')`), with greedy decode as the
 * yardstick, A/B in one process so that this shared machine's drift hits every side alike. Per model (a
 * GGUF path or `synthetic:SHAPE-TYPE`; default stories260K and `synthetic:bench-60m-q4_k_m`) one engine
 * loads it; a seeded 16-token prompt is prefilled, then `tokens` tokens decode through the engine's chained
 * loop (webgpu/decoder.ts `chainedTokens`) in each mode: greedy; temperature 0.8 with top-p 0.95 (top-k
 * off); temperature 0.8 with top-k 40 — the sampled ones with the passes chosen and with all of them —
 * `rounds` times, the order rotated, after one unmeasured round. decode tok/s = (n − 1) ÷ (last token −
 * first token); medians. Runs in Node + Dawn (SwiftShader where no Vulkan driver is configured); writes
 * a section into BENCHMARKS.md between `<!-- bench:sampler DATE -->` and `<!-- /bench:sampler DATE -->`.
 */
import { cpus, loadavg } from 'node:os';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { markdownTable } from '../src/bench/markdown.ts';
import { setupNodeVulkan } from '../src/cli/node-gpu.ts';
import { openModelSource } from '../src/library/opener.ts';
import { stories260kPath } from '../src/testing/models.ts';
import { chainedTokens } from '../src/webgpu/decoder.ts';
import { WebGpuEngine } from '../src/webgpu/engine.ts';
import type { SampleSettings } from '../src/webgpu/kernels/sample.ts';
import { cpuModel, cpuRow, gitCommit, randomTokenIds, writeBenchSection } from './bench-common.ts';

const USAGE =
  'usage: npm run bench:sampler -- [--models PATH|synthetic:SHAPE-TYPE,…] [--tokens 24] [--rounds 4] [--no-write] [--gpu]';
let values: {
  models?: string;
  tokens: string;
  rounds: string;
  'no-write': boolean;
  gpu: boolean;
  help: boolean;
};
try {
  ({ values } = parseArgs({
    options: {
      models: { type: 'string' },
      tokens: { type: 'string', default: '24' },
      rounds: { type: 'string', default: '4' },
      'no-write': { type: 'boolean', default: false },
      gpu: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (e) {
  console.error(`${(e as Error).message}\n${USAGE}`);
  process.exit(2);
}
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const tokens = Number(values.tokens);
const rounds = Number(values.rounds);
if (!Number.isInteger(tokens) || tokens < 3 || tokens > 1000 || !Number.isInteger(rounds) || rounds < 1) {
  console.error(`--tokens must be 3..1000 and --rounds ≥ 1\n${USAGE}`);
  process.exit(2);
}
const models = values.models?.split(',').filter(Boolean) ?? [stories260kPath(), 'synthetic:bench-60m-q4_k_m'];
setupNodeVulkan(values.gpu);

const sampled = (o: Partial<SampleSettings>): SampleSettings => ({
  temperature: 0.8,
  topK: 0,
  topP: 1,
  minP: 0,
  repetitionPenalty: 1,
  repetitionLastN: 64,
  ...o,
});
/** The modes, in the order of the first round: [name, settings (undefined: greedy), passes]. */
const MODES: [string, SampleSettings | undefined, 'needed' | 'all'][] = [
  ['greedy', undefined, 'needed'],
  ['top-p 0.95, passes chosen', sampled({ topP: 0.95 }), 'needed'],
  ['top-p 0.95, every pass', sampled({ topP: 0.95 }), 'all'],
  ['top-k 40, passes chosen', sampled({ topK: 40 }), 'needed'],
  ['top-k 40, every pass', sampled({ topK: 40 }), 'all'],
];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
}

const rows: string[][] = [];
let adapter = '';
const loadBefore = loadavg();
for (const model of models) {
  const engine = new WebGpuEngine({ openModel: openModelSource });
  const info = await engine.load(model.startsWith('synthetic:') ? { synthetic: model } : { path: model }, {
    contextLength: 16 + tokens + 8,
  });
  const m = engine.llama!;
  const a = m.device.adapterInfo;
  adapter = `${a.vendor} / ${a.architecture} (${a.description})`;
  const prompt = randomTokenIds(16, info.nVocab, 40);
  /** One decode of `tokens` tokens in mode i: tok/s after the first token. */
  const decode = async (i: number): Promise<number> => {
    const [, settings, passes] = MODES[i];
    await m.prefill(prompt, 0);
    if (settings) await m.startSampling(settings, 7, prompt, passes);
    const at: number[] = [];
    for await (const _ of chainedTokens(m, { pos: prompt.length, maxTokens: tokens, sampled: !!settings }))
      at.push(performance.now());
    return ((at.length - 1) / (at[at.length - 1] - at[0])) * 1000;
  };
  for (let i = 0; i < MODES.length; i++) await decode(i); // unmeasured
  const tps: number[][] = MODES.map(() => []);
  const passes: string[] = [];
  for (let i = 0; i < MODES.length; i++) {
    const s = MODES[i][1];
    if (s) await m.startSampling(s, 7, prompt, MODES[i][2]);
    passes.push(s ? m.samplerRoles.join(' + ') : 'argmax (2 passes)');
  }
  for (let r = 0; r < rounds; r++) {
    const order = MODES.map((_, i) => (i + r) % MODES.length);
    for (const i of order) tps[i].push(await decode(i));
  }
  const med = tps.map(median);
  for (let i = 0; i < MODES.length; i++) {
    console.error(`${basename(model)} ${MODES[i][0]}: ${tps[i].map((x) => x.toFixed(2)).join(' ')} tok/s`);
    const every = MODES[i][2] === 'needed' && MODES[i + 1]?.[2] === 'all' ? med[i + 1] : undefined;
    rows.push([
      i === 0 ? `${basename(model)} (vocabulary ${info.nVocab})` : '',
      MODES[i][0],
      passes[i],
      med[i].toFixed(2),
      i === 0 ? '1' : `${(med[i] / med[0]).toFixed(2)}×`,
      every ? `${(med[i] / every).toFixed(2)}×` : '',
    ]);
  }
  await engine.dispose();
}
const date = new Date().toISOString().slice(0, 10);
const lines = [
  `## ${date}: the GPU sampler's passes chosen per request, A/B in one process (\`npm run bench:sampler\`)`,
  '',
  `Recorded by \`npm run bench:sampler -- --models ${models.join(',')} --tokens ${tokens} --rounds ${rounds}\` (scripts/bench-sampler.ts), commit ${gitCommit(['src', 'scripts'])}, in Node + Dawn. Per model one engine; a seeded 16-token prompt, then ${tokens} tokens through the chained decode loop in each mode, ${rounds} rounds with the order rotated after one unmeasured round (median decode tok/s after the first token). "every pass": the sampler's planned passes all encoded, those the request does not use returning at once (the path before); "passes chosen": only those its parameters need.`,
  '',
  '| | |',
  '| --- | --- |',
  cpuRow(cpuModel(), cpus().length, { before: 'the run', loadBefore, after: 'it', loadAfter: loadavg() }),
  `| WebGPU adapter (ours, Node + Dawn) | ${adapter} |`,
  '',
  ...markdownTable(
    ['model', 'mode', 'passes encoded per token', 'decode tok/s', '÷ greedy', 'chosen ÷ every pass'],
    rows,
    2,
  ),
];
const text = lines.join('\n');
console.log(text);
if (!values['no-write'])
  writeBenchSection(
    'sampler',
    date,
    `<!-- bench:sampler ${date} -->\n${text}\n\n<!-- /bench:sampler ${date} -->`,
  );
process.exit(0);
