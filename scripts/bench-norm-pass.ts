/**
 * `npm run bench:norm-pass [-- --types Q4_K_M,Q4_0,Q8_0 --tokens 102 --rounds 6 --no-write]`: the prefill
 * norm pass (model/options.ts `PrefillMatmul.normPass`) A/B in one process, so that this shared machine's
 * drift hits both sides alike. Per type, two engines load the same synthetic `bench-60m` model (512 wide,
 * 8 layers, FFN 1536, 32k vocabulary; src/webgpu/model/synthetic.ts) with the adapter's default prefill
 * choice (kernel-plan.ts `prefillMatmulFor`), one with `normPass` false and one with true; then a prefill
 * of `tokens` seeded random ids from position 0 (`LlamaModel.prefill`, waited for on the GPU queue) runs
 * on each in turn, `rounds` times, the order alternated, after one unmeasured prefill on each. Reports the
 * median ms of each and the change.
 * Runs in Node + Dawn (SwiftShader where no Vulkan driver is configured, where the pass is the default);
 * writes a section into BENCHMARKS.md between `<!-- bench:norm-pass DATE -->` and
 * `<!-- /bench:norm-pass DATE -->`.
 */
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { markdownTable } from '../src/bench/markdown.ts';
import { setupNodeVulkan } from '../src/cli/node-gpu.ts';
import { createGpuContext } from '../src/webgpu/device.ts';
import { WebGpuEngine } from '../src/webgpu/engine.ts';
import { prefillMatmulFor } from '../src/webgpu/kernel-plan.ts';
import { parseSyntheticName } from '../src/webgpu/model/synthetic.ts';
import { cpuModel, cpuRow, gitCommit, randomTokenIds, writeBenchSection } from './bench-common.ts';

const USAGE =
  'usage: npm run bench:norm-pass -- [--types Q4_K_M,Q4_0,Q8_0] [--tokens 102] [--rounds 6] [--no-write] [--gpu]';
let values: {
  types: string;
  tokens: string;
  rounds: string;
  'no-write': boolean;
  gpu: boolean;
  help: boolean;
};
try {
  ({ values } = parseArgs({
    options: {
      types: { type: 'string', default: 'Q4_K_M,Q4_0,Q8_0' },
      tokens: { type: 'string', default: '102' },
      rounds: { type: 'string', default: '6' },
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
if (!Number.isInteger(tokens) || tokens < 1 || tokens > 2000 || !Number.isInteger(rounds) || rounds < 1) {
  console.error(`--tokens must be 1..2000 and --rounds ≥ 1\n${USAGE}`);
  process.exit(2);
}
const types = values.types.split(',');
for (const t of types) {
  try {
    parseSyntheticName(`bench-60m-${t.toLowerCase()}`);
  } catch (e) {
    console.error(`--types: ${(e as Error).message}\n${USAGE}`);
    process.exit(2);
  }
}
setupNodeVulkan(values.gpu);

// The adapter's own prefill choice, with only normPass set (a GPU's tile choice has no norm pass).
const gpu = await createGpuContext();
const base = prefillMatmulFor(gpu);
gpu.device.destroy();
if (base.kind !== 'mmv') {
  console.error(
    'this adapter prefills with the tile kernel (kernels/mmm.ts): there is no norm pass to compare',
  );
  process.exit(2);
}
const adapter = `${gpu.info.vendor} / ${gpu.info.architecture} (${gpu.info.description})${gpu.info.isFallback ? ', a software adapter: not GPU figures' : ''}`;
/** The median (the mean of the two middle values for an even count). */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
}
const rows: string[][] = [];
let choice = '';
const loadBefore = loadavg();
for (const type of types) {
  const engines: WebGpuEngine[] = [];
  for (const normPass of [false, true]) {
    const e = new WebGpuEngine({ prefill: { ...base, normPass } });
    const info = await e.load({ synthetic: `bench-60m-${type.toLowerCase()}` } as never, {
      contextLength: tokens + 16,
    });
    choice = JSON.stringify({ ...info.kernels?.prefill, normPass: undefined });
    engines.push(e);
  }
  const ids = randomTokenIds(tokens, 32000, 102);
  // One unmeasured prefill on each engine first (the first after a load pays for warm-up).
  for (const e of engines) {
    await e.llama!.prefill(ids, 0);
    await e.llama!.device.queue.onSubmittedWorkDone();
  }
  const ms: number[][] = [[], []];
  for (let r = 0; r < rounds; r++) {
    for (const i of r % 2 ? [1, 0] : [0, 1]) {
      const m = engines[i].llama!;
      const t0 = performance.now();
      await m.prefill(ids, 0);
      await m.device.queue.onSubmittedWorkDone();
      ms[i].push(performance.now() - t0);
    }
  }
  const [a, b] = ms.map(median);
  console.error(
    `${type}: without ${ms[0].map((x) => x.toFixed(0)).join(' ')}; with ${ms[1].map((x) => x.toFixed(0)).join(' ')}`,
  );
  rows.push([
    type,
    a.toFixed(0),
    b.toFixed(0),
    `${(((b - a) / a) * 100).toFixed(0)}%`,
    ((tokens / b) * 1000).toFixed(1),
  ]);
  for (const e of engines) await e.dispose();
}
const date = new Date().toISOString().slice(0, 10);
const lines = [
  `## ${date}: the prefill norm pass, A/B in one process (\`npm run bench:norm-pass\`)`,
  '',
  `Recorded by \`npm run bench:norm-pass -- --types ${values.types} --tokens ${tokens} --rounds ${rounds}\` (scripts/bench-norm-pass.ts), commit ${gitCommit(['src', 'scripts'])}, in Node + Dawn. Per type two engines load the same synthetic \`bench-60m\` model with the adapter's default prefill choice, \`normPass\` false and true; a ${tokens}-token prefill of seeded random ids from position 0 alternates between them ${rounds} times after one unmeasured prefill on each (median ms; the change is with ÷ without − 1).`,
  '',
  '| | |',
  '| --- | --- |',
  cpuRow(cpuModel(), cpus().length, { before: 'the run', loadBefore, after: 'it', loadAfter: loadavg() }),
  `| WebGPU adapter (ours, Node + Dawn) | ${adapter} |`,
  `| Prefill choice | ${choice} |`,
  '',
  ...markdownTable(
    ['type', 'without the pass ms', 'with the pass ms', 'change', 'with the pass tok/s'],
    rows,
    1,
  ),
];
const text = lines.join('\n');
console.log(text);
if (!values['no-write'])
  writeBenchSection(
    'norm-pass',
    date,
    `<!-- bench:norm-pass ${date} -->\n${text}\n\n<!-- /bench:norm-pass ${date} -->`,
  );
process.exit(0);
