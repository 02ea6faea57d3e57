/**
 * `npm run gguf-split -- IN.gguf OUT_PREFIX [--split-max-tensors N | --split-max-size N(M|G) | --n-parts N]
 * [--no-tensor-first-split]`
 *
 * The field's `llama-gguf-split --split`: writes OUT_PREFIX-00001-of-0000N.gguf, … in llama.cpp's split
 * format (src/gguf/split.ts; the same bytes llama-gguf-split writes). Such a model loads from its
 * first part here and in llama.cpp. The model is held in memory while it is written (fine for the test and
 * demo models this is for). IN.gguf must be a whole model: a part of a split model (`split.count` > 1) is
 * refused before anything is written; OUT_PREFIX's folder must exist (a usage error, exit 2, otherwise).
 */
import { writeFileSync } from 'node:fs';
import { openGguf } from '../gguf/reader.ts';
import { splitFileName, writeSplitGguf } from '../gguf/split.ts';
import { metadataEntriesFrom } from '../gguf/writer.ts';
import { checkOutputFolder, optIntArg, parseCliArgs, UsageError } from './args.ts';
import { checkLocalModel, refuseSplitPart } from './local-model.ts';
import { type CliCommand, isEntryPoint, runCli } from './run.ts';

const USAGE = `usage: npm run gguf-split -- IN.gguf OUT_PREFIX [options]
  --split-max-tensors N     a new part every N tensors (default 128, as llama-gguf-split)
  --split-max-size N[M|G]   a new part before the tensor data passes N MB / GB
  --n-parts N               exactly N parts, the tensors spread evenly
  --no-tensor-first-split   the first part holds only the metadata
  (at most one of --split-max-tensors, --split-max-size and --n-parts; IN.gguf is a whole model, not a part
  of a split one; OUT_PREFIX's folder must exist)`;

/** `500M` / `2G` in bytes. @throws UsageError for anything else, or a size under one byte. */
function size(v: string): number {
  const m = /^(\d+(?:\.\d+)?)([MG])$/i.exec(v);
  const bytes = m ? Math.floor(Number(m[1]) * (m[2].toUpperCase() === 'G' ? 1e9 : 1e6)) : 0;
  if (!(bytes >= 1))
    throw new UsageError(`--split-max-size wants a number > 0 with M or G, e.g. 500M or 2G (got "${v}")`);
  return bytes;
}

async function main(): Promise<number> {
  const { values, positionals } = parseCliArgs({
    allowPositionals: true,
    options: {
      'split-max-tensors': { type: 'string' },
      'split-max-size': { type: 'string' },
      'n-parts': { type: 'string' },
      'no-tensor-first-split': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length !== 2) {
    console.error(
      `error [invalid_argument]: give IN.gguf and OUT_PREFIX (got ${positionals.length} argument${positionals.length === 1 ? '' : 's'})\n\n${USAGE}`,
    );
    return 2;
  }
  const [input, prefix] = positionals;
  // Every number before any work: `--n-parts ""` or `--split-max-tensors abc` is a usage error, not "unset".
  const maxTensorsPerPart = optIntArg(values['split-max-tensors'], 'split-max-tensors', 1);
  const nParts = optIntArg(values['n-parts'], 'n-parts', 1, 0xffff); // llama.cpp's part-number width
  const maxBytesPerPart = values['split-max-size'] === undefined ? undefined : size(values['split-max-size']);
  const limits = ['split-max-tensors', 'split-max-size', 'n-parts'] as const;
  const given = limits.filter((f) => values[f] !== undefined);
  if (given.length > 1)
    throw new UsageError(
      `give at most one of --split-max-tensors, --split-max-size and --n-parts (got ${given.map((f) => `--${f}`).join(', ')})`,
    );
  checkLocalModel(input);
  checkOutputFolder(prefix, 'OUT_PREFIX');
  const file = await openGguf({ path: input });
  refuseSplitPart(file, input, 'gguf-split');
  const data = new Map<string, Uint8Array[]>();
  await file.streamTensorData((c) => {
    data.set(c.tensor.name, [...(data.get(c.tensor.name) ?? []), c.bytes]);
  });
  const join = (parts: Uint8Array[]) => {
    const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
    let o = 0;
    for (const p of parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  };
  const parts = writeSplitGguf({
    metadata: metadataEntriesFrom(file),
    tensors: [...file.tensors.values()].map((t) => ({
      name: t.name,
      type: t.type,
      shape: t.shape,
      data: join(data.get(t.name) ?? []),
    })),
    alignment: file.alignment,
    maxTensorsPerPart,
    maxBytesPerPart,
    nParts,
    noTensorsInFirstPart: values['no-tensor-first-split'],
  });
  parts.forEach((bytes, i) => {
    const name = splitFileName(prefix, i + 1, parts.length);
    writeFileSync(name, bytes);
    console.log(`${name}: ${bytes.length.toLocaleString('en-US')} bytes`);
  });
  return 0;
}

/** This command's entry point, for tests that run it in-process (src/testing/cli-in-process.ts). */
export const cli: CliCommand = { main, usageHint: 'npm run gguf-split -- --help lists the options' };

if (isEntryPoint(import.meta.url)) runCli(cli.main, cli.format, cli.usageHint);
