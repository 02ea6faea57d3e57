/**
 * `npm run quantize -- IN OUT TYPE [--pure] [--fallback engine|llama.cpp]`
 *
 * The field's `llama-quantize`: reads a GGUF model with F32/F16/BF16 weights and writes it with its
 * weight matrices in TYPE (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q4_K, Q4_K_M, Q6_K, Q2_K, Q3_K_S, Q3_K_M,
 * Q3_K_L, Q5_K_S, Q5_K_M, F16, BF16, F32), choosing per-tensor types as
 * llama.cpp does (see `src/gguf/quantize-model.ts`). Prints one line per tensor and a summary. OUT's folder
 * must exist and IN must be a whole model (not a part of a split one): both are checked before any tensor
 * is quantized.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { FTYPES, type QuantizeFtype, quantizeGguf } from '../gguf/quantize-model.ts';
import { openGguf } from '../gguf/reader.ts';
import { checkOutputFolder, parseCliArgs, UsageError } from './args.ts';
import { checkLocalModel, refuseSplitPart } from './local-model.ts';
import { type CliCommand, isEntryPoint, runCli } from './run.ts';

const USAGE = `usage: npm run quantize -- IN.gguf OUT.gguf TYPE [--pure] [--fallback engine|llama.cpp]
  TYPE: ${Object.keys(FTYPES).join(', ')}
  --pure        every quantized tensor in TYPE's base type (no Q6_K output/attn_v/ffn_down mix)
  --fallback    type for rows the block size does not divide: engine (default: Q4_K/Q5_K/Q6_K -> Q8_0,
                Q2_K/Q3_K -> Q4_0) or llama.cpp (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0,
                Q2_K/Q3_K -> Q4_0); IQ4_XS -> IQ4_NL either way; F16 when 32 does not divide either`;

function mib(n: number): string {
  return `${(n / 1048576).toFixed(2)} MiB`;
}

async function main(): Promise<number> {
  const { values, positionals } = parseCliArgs({
    allowPositionals: true,
    options: {
      pure: { type: 'boolean', default: false },
      fallback: { type: 'string', default: 'engine' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length !== 3) {
    console.error(
      `error [invalid_argument]: give IN.gguf, OUT.gguf and TYPE (got ${positionals.length} argument${positionals.length === 1 ? '' : 's'})\n\n${USAGE}`,
    );
    return 2;
  }
  const [input, output, typeArg] = positionals;
  const type = typeArg.toUpperCase() as QuantizeFtype;
  if (!Object.hasOwn(FTYPES, type))
    throw new UsageError(`unknown type ${typeArg}; choose one of ${Object.keys(FTYPES).join(', ')}`);
  if (values.fallback !== 'engine' && values.fallback !== 'llama.cpp')
    throw new UsageError(`--fallback must be engine or llama.cpp, not ${values.fallback}`);
  checkLocalModel(resolve(input), input);
  checkOutputFolder(output, 'OUT.gguf');
  const file = await openGguf({ path: resolve(input) });
  refuseSplitPart(file, input, 'quantize');
  const sizes = new Map([...file.tensors.values()].map((t) => [t.name, t.nBytes]));
  const { bytes, plan } = await quantizeGguf(
    file,
    type,
    { pure: values.pure, fallback: values.fallback },
    (p, i, total) => {
      const what = p.from === p.to ? `${p.to}, copied` : `${p.from} -> ${p.to}`;
      console.log(
        `[${String(i + 1).padStart(4)}/${total}] ${p.name.padEnd(32)} [${p.shape.join(', ')}] ${what}` +
          (p.note && p.note !== 'not quantized' ? ` (${p.note})` : ''),
      );
    },
  );
  writeFileSync(output, bytes);
  const before = [...sizes.values()].reduce((a, b) => a + b, 0);
  const counts = new Map<string, number>();
  for (const p of plan) counts.set(p.to, (counts.get(p.to) ?? 0) + 1);
  console.log(
    `wrote ${output}: ${type} (general.file_type ${FTYPES[type].fileType}), tensors ${mib(before)} -> ` +
      `${mib(bytes.length)} file; types: ${[...counts].map(([t, n]) => `${t} ×${n}`).join(', ')}`,
  );
  return 0;
}

/** This command's entry point, for tests that run it in-process (src/testing/cli-in-process.ts). */
export const cli: CliCommand = { main, usageHint: 'npm run quantize -- --help lists the options' };

if (isEntryPoint(import.meta.url)) runCli(cli.main, cli.format, cli.usageHint);
