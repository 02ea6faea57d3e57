/**
 * `npm run bench -- --llama-bench …`: the options of the benchmark's part two (llama-bench tests, memory
 * probe and fit verdict, kernel profile, cost per token), their parsing and the text tables printed for
 * them. Kept apart from src/cli/bench.ts, which spreads {@link LLAMA_BENCH_OPTIONS} into its parser.
 */

import { markdownTable } from '../bench/markdown.ts';
import type { BenchEvent, BenchOptions, CostInput } from '../bench/page-api.ts';
import type { BenchResult } from '../bench/types.ts';
import { fmtBytes } from '../util/format.ts';
import { intArg, intListArg, numArg, UsageError } from './args.ts';

/** parseArgs option definitions. */
export const LLAMA_BENCH_OPTIONS = {
  'llama-bench': { type: 'boolean', default: false },
  'n-prompt': { type: 'string' },
  'n-gen': { type: 'string' },
  depth: { type: 'string' },
  reps: { type: 'string' },
  'no-profile': { type: 'boolean', default: false },
  'probe-memory': { type: 'boolean', default: false },
  'probe-cap-gb': { type: 'string' },
  'price-per-hour': { type: 'string' },
  'power-w': { type: 'string' },
  'kwh-price': { type: 'string' },
  currency: { type: 'string' },
} as const;

export const LLAMA_BENCH_USAGE = `  --llama-bench                     llama-bench style tests instead of the prompt plan: pp (prefill) and tg
                                    (decode) at KV depths, warm-up + reps, mean ± std tok/s; with the memory
                                    probe, the fit verdict and the GPU time per kernel (timestamp-query)
  --n-prompt N[,N…]                 pp sizes (default 512; 0 = none)
  --n-gen N[,N…]                    tg lengths (default 128; 0 = none)
  --depth D[,D…]                    KV-cache depths (default 0); a depth that does not fit the context is
                                    skipped
  --reps N                          measured repetitions per test (default 5)
  --no-profile                      skip the kernel profile
  --probe-memory                    probe memory and give the fit verdict in a normal run too
  --probe-cap-gb X                  stop the memory probe at X GiB (default 1 on a software adapter, 64 else)
  --price-per-hour X                remote: the instance's price per hour → cost per 1M output tokens
  --power-w W --kwh-price P         local: power draw (W) and electricity price per kWh → cost per 1M tokens
  --currency C                      currency of the prices (default USD)`;

/** The values parseArgs returns for {@link LLAMA_BENCH_OPTIONS}. */
export type LlamaBenchValues = {
  [K in keyof typeof LLAMA_BENCH_OPTIONS]?: (typeof LLAMA_BENCH_OPTIONS)[K]['type'] extends 'boolean'
    ? boolean
    : string;
};

/**
 * The BenchOptions fields these flags set. @throws UsageError for bad values (read strictly, see
 * src/cli/args.ts), llama-bench sizes without `--llama-bench`, or half of the local price.
 */
export function llamaBenchOptions(
  v: LlamaBenchValues,
): Pick<BenchOptions, 'llamaBench' | 'profile' | 'probeMemory' | 'cost'> {
  const out: Pick<BenchOptions, 'llamaBench' | 'profile' | 'probeMemory' | 'cost'> = {};
  if (!v['llama-bench'] && (v['n-prompt'] || v['n-gen'] || v.depth || v.reps))
    throw new UsageError('--n-prompt, --n-gen, --depth and --reps need --llama-bench');
  if (v['llama-bench']) {
    out.llamaBench = {
      nPrompt: intListArg(v['n-prompt'], 'n-prompt', 0, [512]),
      nGen: intListArg(v['n-gen'], 'n-gen', 0, [128]),
      depths: intListArg(v.depth, 'depth', 0, [0]),
      reps: intArg(v.reps, 'reps', 1, 5),
    };
    out.profile = !v['no-profile'];
  }
  const num = (x: string | undefined, name: string) => numArg(x, name, { min: 0 });
  const cap = numArg(v['probe-cap-gb'], 'probe-cap-gb', { positive: true });
  if (cap !== undefined) out.probeMemory = { capBytes: Math.round(cap * 1024 ** 3) };
  else if (v['probe-memory']) out.probeMemory = true;
  const currency = v.currency;
  const pph = num(v['price-per-hour'], 'price-per-hour');
  const w = num(v['power-w'], 'power-w');
  const kwh = num(v['kwh-price'], 'kwh-price');
  if (pph !== undefined && (w !== undefined || kwh !== undefined))
    throw new UsageError('give --price-per-hour (remote) or --power-w with --kwh-price (local), not both');
  if ((w === undefined) !== (kwh === undefined))
    throw new UsageError('--power-w and --kwh-price go together');
  let cost: CostInput | undefined;
  if (pph !== undefined) cost = { pricePerHour: pph, currency };
  else if (w !== undefined && kwh !== undefined) cost = { powerW: w, pricePerKWh: kwh, currency };
  if (cost) out.cost = cost;
  return out;
}

const f = (n: number | null | undefined, d = 2) =>
  n === null || n === undefined || !Number.isFinite(n) ? '—' : n.toFixed(d);
const gib = (n: number) => `${(n / 1024 ** 3).toFixed(2)} GiB`;

/** A progress line for this part's events (stderr), or undefined for other events. */
export function llamaBenchEventLine(e: BenchEvent): string | undefined {
  if (e.type === 'memory') {
    const m = e.memory;
    const fit = e.fits
      ? `; model ${e.fits.ok ? 'fits' : e.fits.certain === false ? 'may not fit' : 'does NOT fit'}: ${e.fits.reason}`
      : '';
    return `memory: max buffer ${gib(m.maxBufferBytes)}, max binding ${gib(m.maxBindingBytes)}, allocatable ${m.capped ? '≥ ' : ''}${gib(m.allocatableBytes)} (${f(m.ms, 0)} ms)${fit}`;
  }
  if (e.type === 'llama-bench-progress') {
    const p = e.progress;
    return p.rep === 0
      ? `${p.test}: warm-up done`
      : `${p.test}: rep ${p.rep}/${p.reps} ${f(p.tokensPerSecond)} tok/s`;
  }
  return undefined;
}

/** The llama-bench table, the kernel table, memory and cost, as text (stdout). */
export function formatLlamaBench(r: BenchResult): string {
  const lines: string[] = [];
  if (r.tests?.length) {
    const model = `${r.model.id} ${r.model.quantization}${r.model.kvType ? `, KV ${r.model.kvType}` : ''}`;
    lines.push(
      ...markdownTable(
        ['model', 'size', 'test', 't/s'],
        r.tests.map((t) => [
          model,
          fmtBytes(r.model.bytes),
          t.name,
          `${f(t.tokensPerSecond.mean)} ± ${f(t.tokensPerSecond.std)}`,
        ]),
      ),
    );
  }
  const g = r.gpu;
  if (g) {
    lines.push('');
    lines.push(
      `GPU time per decode token: ${f(g.gpuMsPerToken, 3)} ms of ${f(g.wallMsPerToken, 3)} ms wall → busy ${g.busyFraction === null ? '—' : `${f(g.busyFraction * 100, 1)} %`}; ${g.dispatchesPerToken} dispatches per token; timestamps ${g.timestamps}`,
    );
    if (g.note) lines.push(`  note: ${g.note}`);
    if (g.kernels.length) {
      lines.push(
        ...markdownTable(
          ['kernel', 'ms/token', 'share', 'prefill ms/token'],
          g.kernels.map((k) => [
            k.name,
            f(k.msPerToken, 4),
            `${f(k.share * 100, 1)} %`,
            f(g.prefillKernels?.find((x) => x.name === k.name)?.msPerToken, 4),
          ]),
        ),
      );
    }
  }
  if (r.memory) {
    const m = r.memory;
    lines.push('');
    lines.push(
      `memory: max buffer ${gib(m.maxBufferBytes)}, max binding ${gib(m.maxBindingBytes)}, allocatable ${m.capped ? `≥ ${gib(m.allocatableBytes)} (probe capped)` : gib(m.allocatableBytes)}`,
    );
  }
  if (r.model.fits) lines.push(`fits: ${r.model.fits.ok ? 'yes' : 'no'} — ${r.model.fits.reason}`);
  if (r.cost) {
    const c = r.cost;
    lines.push(
      `cost: ${f(c.per1MOutputTokens, 4)} ${c.currency} per 1M output tokens at ${f(c.tokensPerSecond)} tok/s (${c.basis === 'local' ? `${c.powerW} W × ${c.pricePerKWh} ${c.currency}/kWh = ` : ''}${f(c.pricePerHour, 4)} ${c.currency}/h)`,
    );
  }
  return lines.join('\n');
}
