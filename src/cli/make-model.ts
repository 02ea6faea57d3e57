/**
 * `npm run make-model -- --arch ARCH --out FILE [--seed N] [--layers N --embd N --ff N --heads N
 * --kv-heads N --vocab N] [--ctx N] [--type F32|F16]`
 *
 * Writes a random-weight GGUF model of any architecture in `MAKE_MODEL_ARCHS`
 * (src/model/make-model.ts) with our GGUF writer: a small default shape per architecture, any size
 * overridden by its flag. Same arguments, same bytes. Prints what it wrote (architecture, shape, tensors,
 * bytes, SHA-256). Bad arguments exit 2 (`error [invalid_argument]: …`), a --out whose folder does not exist
 * among them.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { EngineError } from '../core/errors.ts';
import { openGguf } from '../gguf/reader.ts';
import {
  MAKE_MODEL_ARCHS,
  MAKE_MODEL_DEFAULT_CONTEXT,
  type MakeModelShape,
  makeModelArchitectures,
  makeModelGguf,
} from '../model/make-model.ts';
import { checkOutputFolder, intArg, optIntArg, parseCliArgs, UsageError } from './args.ts';
import { runCli } from './run.ts';

const USAGE = `usage: npm run make-model -- --arch ARCH --out FILE [--seed N] [--layers N] [--embd N] [--ff N]
    [--heads N] [--kv-heads N] [--vocab N] [--ctx N] [--type F32|F16]
  ARCH: ${Object.values(MAKE_MODEL_ARCHS)
    .map((e) => {
      const d = e.defaults;
      return `\n    ${e.architecture.padEnd(7)} ${e.description}; default --layers ${d.nLayers} --embd ${d.nEmbd} --ff ${d.nFF} --heads ${d.nHead} --kv-heads ${d.nHeadKv} --vocab ${d.nVocab} (min ${e.minVocab})`;
    })
    .join('')}
  --seed        weights' seed, an integer 0 … 4294967295 (default 1); same arguments, same bytes
  --ctx         context_length written to the file (default ${MAKE_MODEL_DEFAULT_CONTEXT})
  --type        type of the 2-D weight matrices, F32 (default) or F16; norms stay F32
  Quantize the result with: npm run quantize -- FILE OUT.gguf Q4_K_M (K-quants and IQ4_XS need --embd 256 or
  wider: narrower rows get the fallback types)`;

/** The most layers a model may have: llama.cpp's LLAMA_MAX_LAYERS (src/llama-hparams.h). */
const MAX_LAYERS = 512;

/** `--flag` → shape field. */
const SIZE_FLAGS: [string, keyof MakeModelShape][] = [
  ['layers', 'nLayers'],
  ['embd', 'nEmbd'],
  ['ff', 'nFF'],
  ['heads', 'nHead'],
  ['kv-heads', 'nHeadKv'],
  ['vocab', 'nVocab'],
];

async function main(): Promise<number> {
  const { values } = parseCliArgs({
    options: {
      arch: { type: 'string' },
      out: { type: 'string' },
      seed: { type: 'string' },
      layers: { type: 'string' },
      embd: { type: 'string' },
      ff: { type: 'string' },
      heads: { type: 'string' },
      'kv-heads': { type: 'string' },
      vocab: { type: 'string' },
      ctx: { type: 'string' },
      type: { type: 'string', default: 'F32' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.arch === undefined)
    throw new UsageError(`--arch is required; supported: ${makeModelArchitectures().join(', ')}`);
  if (values.out === undefined) throw new UsageError('--out FILE is required');
  const type = values.type.toUpperCase();
  if (type !== 'F32' && type !== 'F16')
    throw new UsageError(`--type must be F32 or F16, got "${values.type}"`);
  const seed = intArg(values.seed, 'seed', 0, 1, 2 ** 32 - 1);
  const contextLength = intArg(values.ctx, 'ctx', 1, MAKE_MODEL_DEFAULT_CONTEXT, 1 << 28);
  const sizes: Partial<MakeModelShape> = {};
  for (const [flag, key] of SIZE_FLAGS) {
    // Layers: at most llama.cpp's LLAMA_MAX_LAYERS (512, llama-hparams.h); 2^24 passed the old bound and
    // ended as an untyped "Map maximum size exceeded".
    const max = flag === 'layers' ? MAX_LAYERS : 1 << 24;
    const v = optIntArg(values[flag as keyof typeof values] as string | undefined, flag, 1, max);
    if (v !== undefined) sizes[key] = v;
  }
  checkOutputFolder(values.out, '--out');
  let made: ReturnType<typeof makeModelGguf>;
  try {
    made = makeModelGguf(values.arch, { ...sizes, seed, weightType: type, contextLength });
  } catch (e) {
    // Unknown architecture, sizes that do not fit together: bad arguments.
    if (e instanceof EngineError && e.code === 'invalid_argument') throw new UsageError(e.message);
    throw e;
  }
  const out = resolve(values.out);
  writeFileSync(out, made.bytes);
  const file = await openGguf({ path: out });
  const s = made.shape;
  const sha256 = createHash('sha256').update(made.bytes).digest('hex');
  console.log(
    `wrote ${values.out}: ${made.entry.architecture}, ${type}, seed ${seed}\n` +
      `  shape: layers ${s.nLayers}, embd ${s.nEmbd}, ff ${s.nFF}, heads ${s.nHead}, kv-heads ${s.nHeadKv}, ` +
      `vocab ${s.nVocab}, ctx ${contextLength}\n` +
      `  tensors: ${file.tensors.size}\n` +
      `  bytes: ${made.bytes.length}\n` +
      `  sha256: ${sha256}`,
  );
  return 0;
}

runCli(main, undefined, 'npm run make-model -- --help lists the options');
