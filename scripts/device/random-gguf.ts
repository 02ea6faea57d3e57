/**
 * Writes a random-weight GGUF file of a real model's shape (`src/webgpu/model/synthetic.ts`'s shapes) and
 * a llama-quantize file type, for engines that need a file (llama.cpp) to run on the same bytes as ours.
 *
 *   tsx scripts/device/write-gguf.ts --shape llama-3.1-8b --ftype Q4_K_M --out /tmp/m.gguf
 *                                    [--mode tiled|exact] [--seed 1] [--pool-elements 4194304]
 *
 * Two modes, the same header (metadata, tensor order, types: byte-identical, checked by
 * write-gguf.test.ts):
 *
 * - `exact`: the project's in-memory path, `makeRandomLlamaGguf` (F16 matrices, or F32 for `--ftype F32`)
 *   then `quantizeGguf`. Every weight is its own random draw. It holds the whole model in memory at
 *   least twice (the tensors, then writeGguf's copy; quantizeGguf again reads every tensor and writes a
 *   second file in memory) and a file is one Uint8Array, which Node 20 caps at 4 GiB: Llama-3.2-1B works
 *   (2.5 GB of F16), Llama-3.1-8B cannot (8 GB even at Q8_0). It is also slow: one thread, about
 *   20 M normal draws/s and 3 M elements/s for Q4_K here (Llama-3.2-1B Q4_K_M: about six minutes).
 * - `tiled` (default): streams the file tensor by tensor with constant memory. Types come from
 *   `planQuantization` (llama-quantize's rules), the header from `ggufHeader`, and each matrix's blocks
 *   from a pool of `--pool-elements` random values per (type, scale) quantized by `quantizeRow` (the
 *   project's quantizer, as in exact mode), repeated from a random block offset to fill the tensor; norms
 *   and `rope_freqs` are drawn in full. Quantized blocks are independent, so any run of whole blocks is a
 *   valid tensor. Speed does not depend on the values (every byte is still read from its own address per
 *   token), so timings match exact mode's; the text is noise either way. Disk speed is the limit
 *   (Llama-3.1-8B F16, 16 GB: seconds plus the write).
 *
 * The command line (scripts/device/write-gguf.ts) prints one JSON line: path, bytes, types, milliseconds.
 */
import { closeSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { ggmlTypeByName, shapeElements, tensorBytes } from '../../src/gguf/ggml-types.ts';
import { quantizeRow } from '../../src/gguf/quantize.ts';
import {
  FTYPES,
  GGML_QNT_VERSION,
  planQuantization,
  type QuantizeFtype,
  quantizeGguf,
  type TensorPlan,
} from '../../src/gguf/quantize-model.ts';
import { openGguf } from '../../src/gguf/reader.ts';
import { ggufHeader, kv } from '../../src/gguf/writer.ts';
import {
  makeRandomLlamaGguf,
  type RandomLlamaOptions,
  randomLlamaMetadata,
  randomLlamaShapes,
  randomTensorScale,
} from '../../src/model/random-model.ts';
import { mulberry32, randn } from '../../src/util/prng.ts';
import { SYNTHETIC_SHAPES, type SyntheticShape } from '../../src/webgpu/model/synthetic.ts';

/** Random-model options for a synthetic shape (the same numbers `synthetic:SHAPE-…` uses). */
export function shapeOptions(shape: SyntheticShape | string, seed = 1): RandomLlamaOptions {
  const s = typeof shape === 'string' ? SYNTHETIC_SHAPES.find((x) => x.id === shape) : shape;
  if (!s) {
    throw new Error(`unknown shape ${String(shape)}; one of ${SYNTHETIC_SHAPES.map((x) => x.id).join(', ')}`);
  }
  const architecture = s.architecture;
  if (architecture !== 'llama' && architecture !== 'qwen2' && architecture !== 'qwen3') {
    throw new Error(`shape ${s.id} is ${architecture}; this writer makes llama, qwen2 and qwen3 shapes only`);
  }
  return {
    seed,
    name: `random ${s.label}`,
    architecture,
    nLayers: s.nLayers,
    nEmbd: s.nEmbd,
    nFF: s.nFF,
    nHead: s.nHead,
    nHeadKv: s.nHeadKv,
    nVocab: s.nVocab,
    contextLength: s.contextLength,
    tied: s.tied,
    ropeFreqBase: s.ropeFreqBase,
    rmsEps: s.rmsEps,
    ropeFreqFactors: s.ropeFreqFactors ?? false,
  };
}

/** `q4_k_m` → `Q4_K_M` (synthetic names use lower case, llama-quantize upper case). */
export function toFtype(name: string): QuantizeFtype {
  const f = name.toUpperCase() as QuantizeFtype;
  if (!(f in FTYPES)) throw new Error(`unknown file type ${name}; one of ${Object.keys(FTYPES).join(', ')}`);
  return f;
}

/** Drops trailing 1s (as quantizeGguf writes shapes). */
function canonShape(s: readonly number[]): number[] {
  const out = [...s];
  while (out.length > 1 && out[out.length - 1] === 1) out.pop();
  return out;
}

/** What {@link writeRandomGguf} wrote. */
export interface WrittenGguf {
  path: string;
  mode: 'tiled' | 'exact';
  ftype: QuantizeFtype;
  bytes: number;
  /** Tensor count per type. */
  types: Record<string, number>;
  ms: number;
  plan: TensorPlan[];
}

/** Options for {@link writeRandomGguf}. */
export interface WriteRandomOptions {
  mode?: 'tiled' | 'exact';
  /** Random values per pool in tiled mode (rounded up to 256); default 2^22. */
  poolElements?: number;
  /**
   * Tiled mode: files of one shape and seed hold the same values whatever their file type, each type
   * its quantization of them — a Q4_0 file is then the F16/Q8_0 file's own Q4_0 copy (a draft model for
   * speculative decoding's upper bound: scripts/device/draft.ts). The value pools are drawn per scale
   * from their own generator (not the file's, whose draws then do not depend on the types) and each
   * matrix starts at a multiple of 256 values. Off by default: files are then as before.
   */
  copies?: boolean;
  log?: (msg: string) => void;
}

function countTypes(plan: readonly TensorPlan[]): Record<string, number> {
  const c: Record<string, number> = {};
  for (const p of plan) c[p.to] = (c[p.to] ?? 0) + 1;
  return c;
}

/** The metadata quantizeGguf would write for this model and file type. */
function fileMetadata(o: RandomLlamaOptions, ftype: QuantizeFtype) {
  const m = randomLlamaMetadata(o);
  m.push(kv.u32('general.quantization_version', GGML_QNT_VERSION));
  m.push(kv.u32('general.file_type', FTYPES[ftype].fileType));
  return m;
}

/** The tensor plan of a random model of this shape and file type (as both modes write it). */
export function randomPlan(o: RandomLlamaOptions, ftype: QuantizeFtype): TensorPlan[] {
  const srcType = ftype === 'F32' ? 'F32' : 'F16';
  return planQuantization(
    [...randomLlamaShapes(o)].map(([name, shape]) => ({
      name,
      shape,
      typeName: shape.length === 1 || name === 'rope_freqs.weight' ? 'F32' : srcType,
    })),
    ftype,
  );
}

/** Bytes of tensor data such a file holds (the header, mostly the vocabulary, comes on top). */
export function plannedDataBytes(o: RandomLlamaOptions, ftype: QuantizeFtype): number {
  return randomPlan(o, ftype).reduce(
    (a, p) => a + Math.ceil(tensorBytes(ggmlTypeByName(p.to).id, canonShape(p.shape), p.name) / 32) * 32,
    0,
  );
}

/**
 * Writes a random llama GGUF of the given shape and file type to `path` (see the file comment for the
 * two modes).
 */
export async function writeRandomGguf(
  path: string,
  o: RandomLlamaOptions,
  ftype: QuantizeFtype,
  opts: WriteRandomOptions = {},
): Promise<WrittenGguf> {
  const t0 = performance.now();
  const mode = opts.mode ?? 'tiled';
  const log = opts.log ?? (() => {});
  if (mode === 'exact') {
    const src = makeRandomLlamaGguf({ ...o, weightType: ftype === 'F32' ? 'F32' : 'F16' });
    log(
      `exact: ${(src.length / 2 ** 20).toFixed(1)} MiB source made in ${(performance.now() - t0).toFixed(0)} ms`,
    );
    const file = await openGguf({ blob: new Blob([src as Uint8Array<ArrayBuffer>]) });
    const q = await quantizeGguf(file, ftype);
    writeFileSync(path, q.bytes);
    return {
      path,
      mode,
      ftype,
      bytes: q.bytes.length,
      types: countTypes(q.plan),
      ms: performance.now() - t0,
      plan: q.plan,
    };
  }

  // Tiled: plan from the source model's tensor list (F16 matrices and F32 norms, as exact mode's source).
  const plan = randomPlan(o, ftype);
  const header = ggufHeader({
    metadata: fileMetadata(o, ftype),
    tensors: plan.map((p) => ({ name: p.name, type: p.to, shape: canonShape(p.shape) })),
  });
  const rng = mulberry32(o.seed);
  const poolElements = Math.ceil((opts.poolElements ?? 2 ** 22) / 256) * 256;
  const pools = new Map<string, Uint8Array>();
  /** copies: the float pools by scale, each from its own generator (seeded by the file seed and its index). */
  const floatPools = new Map<string, Float32Array>();
  const poolFor = (type: string, std: number, mean: number, need: number): Uint8Array => {
    const key = `${type}:${std}:${mean}`;
    let p = pools.get(key);
    if (!p) {
      let f: Float32Array;
      if (opts.copies) {
        const fk = `${std}:${mean}`;
        let g = floatPools.get(fk);
        if (!g) {
          const prng = mulberry32((Math.imul(o.seed, 0x9e3779b1) + floatPools.size + 1) >>> 0);
          g = new Float32Array(Math.min(poolElements, Math.ceil(need / 256) * 256));
          for (let i = 0; i < g.length; i++) g[i] = randn(prng, mean, std);
          floatPools.set(fk, g);
        }
        f = g;
      } else {
        f = new Float32Array(Math.min(poolElements, Math.ceil(need / 256) * 256));
        for (let i = 0; i < f.length; i++) f[i] = randn(rng, mean, std);
      }
      p = type === 'F32' ? new Uint8Array(f.buffer) : quantizeRow(type, f);
      pools.set(key, p);
    }
    return p;
  };
  const CHUNK = 64 * 2 ** 20;
  const chunk = new Uint8Array(CHUNK);
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, header.bytes);
    let written = 0;
    plan.forEach((p, i) => {
      const shape = canonShape(p.shape);
      const n = shapeElements(shape);
      const nBytes = header.nBytes[i];
      let data: Uint8Array | undefined;
      if (p.name === 'rope_freqs.weight') {
        data = new Uint8Array(Float32Array.from({ length: n }, () => 1 + 7 * rng()).buffer);
      } else if (shape.length === 1) {
        const { std, mean } = randomTensorScale(p.name, shape);
        const f = new Float32Array(n);
        for (let k = 0; k < n; k++) f[k] = randn(rng, mean, std);
        data = new Uint8Array(f.buffer);
      }
      if (data) {
        writeSync(fd, data);
      } else {
        const { std, mean } = randomTensorScale(p.name, shape);
        const pool = poolFor(p.to, std, mean, n);
        const { blockBytes: bb, blockSize } = ggmlTypeByName(p.to);
        const poolBlocks = pool.length / bb;
        // copies: start at a multiple of 256 values (every type's block divides it), the same for every type.
        let at = opts.copies
          ? ((Math.floor(rng() * ((poolBlocks * blockSize) / 256)) * 256) / blockSize) * bb
          : Math.floor(rng() * poolBlocks) * bb;
        let left = nBytes;
        while (left > 0) {
          const m = Math.min(CHUNK, left);
          let o2 = 0;
          while (o2 < m) {
            const take = Math.min(m - o2, pool.length - at);
            chunk.set(pool.subarray(at, at + take), o2);
            o2 += take;
            at = (at + take) % pool.length;
          }
          writeSync(fd, chunk, 0, m);
          left -= m;
        }
      }
      const padded = (i + 1 < plan.length ? header.offsets[i + 1] : header.dataSize) - header.offsets[i];
      if (padded > nBytes) writeSync(fd, new Uint8Array(padded - nBytes));
      written += padded;
    });
    if (written !== header.dataSize)
      throw new Error(`wrote ${written} data bytes, expected ${header.dataSize}`);
  } finally {
    closeSync(fd);
  }
  return {
    path,
    mode,
    ftype,
    bytes: header.bytes.length + header.dataSize,
    types: countTypes(plan),
    ms: performance.now() - t0,
    plan,
  };
}
