/**
 * Puts the weights' bytes into their GPU buffers ({@link uploadWeights}): streamed from the GGUF file, or
 * for a synthetic model filled on the GPU (kernels/fill.ts); weights repacked into planes go through a
 * staging buffer per part and are repacked as soon as the part is complete (kernels/repack.ts).
 */
import { EngineError } from '../../core/errors.ts';
import type { NonFiniteScanner } from '../../gguf/non-finite.ts';
import type { GgufFile } from '../../gguf/types.ts';
import type { LlamaConfig } from '../../model/config.ts';
import { phi3RopeFactorsTensor } from '../../model/config-arch.ts';
import { rowBytes, WEIGHT_BLOCK, type WeightType } from '../kernels/common.ts';
import { FILL_PARAMS_BYTES, fillWGSL, packFillParams } from '../kernels/fill.ts';
import { repackParams, repackWGSL, repackWorkgroups } from '../kernels/repack.ts';
import { cachedPipeline } from './dispatch.ts';
import type { LlamaLoadOptions, LlamaLoadTimes } from './options.ts';
import { type GpuWeight, tensorRowBytes } from './weights.ts';

/**
 * Writes every weight's bytes into its buffers and waits until the GPU has them. Adds the time spent
 * waiting for the source to `times.fetchMs` and the time spent writing to `times.uploadMs`.
 * @param weightBytes the file bytes of all weights (the `onUpload` total).
 * @param scanner sees every chunk, to find the first NaN or infinity in the weights (for the message when
 *   the model's logits are not finite).
 * @returns the per-dimension RoPE factors [ropeDim/2] when the model has them (Llama 3.1's
 *   `rope_freqs.weight`, or the LongRoPE factors llama.cpp picks for phi3 at `opts.contextLength`:
 *   llama_model::get_rope_factors), else undefined.
 * @throws EngineError('gguf_invalid') when the file ended before every weight was complete,
 *   'unsupported_model' for phi3 RoPE factors that are not F32 or a fill or repack kernel that does not
 *   compile (with the compiler's messages), and 'network' / 'aborted' from the source
 *   (or 'aborted' from `opts.signal` while a synthetic model is filled). Staging buffers are released.
 */
export async function uploadWeights(
  device: GPUDevice,
  file: GgufFile,
  cfg: LlamaConfig,
  weights: Map<string, GpuWeight>,
  weightBytes: number,
  opts: Pick<LlamaLoadOptions, 'contextLength' | 'signal' | 'onFetch' | 'onUpload'>,
  times: LlamaLoadTimes,
  scanner?: NonFiniteScanner,
): Promise<Float32Array | undefined> {
  const planar = new PlanarUploader(device);
  try {
    await planar.prepare([...weights.values()]);
    let ropeFreqs: Uint8Array | undefined;
    const factorName = cfg.ropeFreqFactors
      ? 'rope_freqs.weight'
      : cfg.phi3
        ? phi3RopeFactorsTensor(cfg.phi3, opts.contextLength)
        : undefined;
    let uploaded = 0;
    if (file.synthetic) {
      ropeFreqs = await fillSynthetic(device, file, weights, planar, file.synthetic.seed, (n) => {
        if (opts.signal?.aborted) throw new EngineError('aborted', 'the load was cancelled');
        uploaded += n;
        opts.onUpload?.(uploaded, weightBytes);
      });
    } else {
      let tWait = performance.now();
      await file.streamTensorData(
        (c) => {
          times.fetchMs += performance.now() - tWait;
          const tw = performance.now();
          const w = weights.get(c.tensor.name)!;
          if (c.tensor.name === factorName) {
            ropeFreqs ??= new Uint8Array(c.tensor.nBytes);
            ropeFreqs.set(c.bytes, c.offset);
          }
          writeChunk(device, planar, w, c.offset, c.bytes);
          scanner?.scan(c);
          uploaded += c.bytes.byteLength;
          opts.onUpload?.(uploaded, weightBytes);
          times.uploadMs += performance.now() - tw;
          tWait = performance.now();
        },
        { signal: opts.signal, onBytes: opts.onFetch },
      );
    }
    if (cfg.phi3 && factorName && weights.get(factorName)!.type !== 'F32') {
      throw new EngineError('unsupported_model', `${factorName} must be F32`);
    }
    planar.checkDone();
    const tq = performance.now();
    await device.queue.onSubmittedWorkDone();
    times.uploadMs += performance.now() - tq;
    return ropeFreqs && factorName && weights.get(factorName)!.type === 'F32'
      ? new Float32Array(ropeFreqs.buffer)
      : undefined;
  } finally {
    planar.destroy();
  }
}

/**
 * Writes `bytes`, found at byte `offset` of weight `w`'s tensor data, into the parts they belong to (or
 * their staging buffers, for a planar weight), padding a piece to whole 4-byte words.
 */
function writeChunk(
  device: GPUDevice,
  planar: PlanarUploader,
  w: GpuWeight,
  offset: number,
  bytes: Uint8Array,
): void {
  const rb = tensorRowBytes(w, w.type, w.K);
  let off = offset;
  let src = bytes;
  while (src.byteLength > 0) {
    const row = Math.floor(off / rb);
    const part = w.parts.find((p) => row >= p.rowStart && row < p.rowStart + p.rowCount)!;
    const partStart = part.rowStart * rb;
    const partEnd = (part.rowStart + part.rowCount) * rb;
    const n = Math.min(src.byteLength, partEnd - off);
    let piece = src.subarray(0, n);
    if (n % 4 !== 0) {
      const padded = new Uint8Array(Math.ceil(n / 4) * 4);
      padded.set(piece);
      piece = padded;
    }
    if (w.planar) {
      device.queue.writeBuffer(planar.staging(w, part), off - partStart, piece);
      planar.advance(w, part, n);
    } else {
      device.queue.writeBuffer(part.buffer, off - partStart, piece);
    }
    off += n;
    src = src.subarray(n);
  }
}

/**
 * Fills every weight of a synthetic model on the GPU (kernels/fill.ts) and returns `rope_freqs.weight`
 * (made on the CPU: Llama 3-style factors from 1 at high frequencies to 8 at low ones) when present.
 */
async function fillSynthetic(
  device: GPUDevice,
  file: GgufFile,
  weights: Map<string, GpuWeight>,
  planar: PlanarUploader,
  seed: number,
  onBytes: (n: number) => void,
): Promise<Uint8Array | undefined> {
  const pipes = new Map<WeightType, GPUComputePipeline>();
  let ropeFreqs: Uint8Array | undefined;
  let tensorId = 0;
  for (const t of file.tensors.values()) {
    tensorId++;
    const w = weights.get(t.name)!;
    if (t.name === 'rope_freqs.weight') {
      const n = t.shape[0];
      const f = Float32Array.from({ length: n }, (_, i) => 1 + (7 * i) / Math.max(1, n - 1));
      ropeFreqs = new Uint8Array(f.buffer);
      device.queue.writeBuffer(w.parts[0].buffer, 0, f);
      onBytes(t.nBytes);
      continue;
    }
    let pipe = pipes.get(w.type);
    if (!pipe) {
      pipe = await cachedPipeline(device, `fill.${w.type}`, fillWGSL(w.type));
      pipes.set(w.type, pipe);
    }
    const mode = t.shape.length === 1 ? (t.name.endsWith('.bias') ? 2 : 1) : 0;
    const std = mode === 2 ? 0.1 : 1 / Math.sqrt(w.K);
    const enc = device.createCommandEncoder({ label: `fill ${t.name}` });
    const params: GPUBuffer[] = [];
    for (const part of w.parts) {
      const target = w.planar ? planar.staging(w, part) : part.buffer;
      const nWords = Math.ceil(target.size / 4);
      const pb = device.createBuffer({
        size: FILL_PARAMS_BYTES,
        usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
      });
      params.push(pb);
      device.queue.writeBuffer(
        pb,
        0,
        packFillParams({ seed, tensorId: tensorId * 16 + params.length, nWords, mode, std }),
      );
      const pass = enc.beginComputePass();
      pass.setPipeline(pipe);
      pass.setBindGroup(
        0,
        device.createBindGroup({
          layout: pipe.getBindGroupLayout(0),
          entries: [
            { binding: 0, resource: { buffer: pb } },
            { binding: 1, resource: { buffer: target } },
          ],
        }),
      );
      const nWg = Math.ceil(nWords / 64);
      pass.dispatchWorkgroups(Math.min(nWg, 65535), Math.ceil(nWg / 65535));
      pass.end();
    }
    device.queue.submit([enc.finish()]);
    if (w.planar) for (const part of w.parts) planar.advance(w, part, part.rowCount * rowBytes(w.type, w.K));
    await device.queue.onSubmittedWorkDone();
    for (const pb of params) pb.destroy();
    onBytes(t.nBytes);
  }
  return ropeFreqs;
}

/**
 * Uploads the weights that are repacked into planes (kernels/repack.ts): each part's raw bytes go into a
 * staging buffer, and once the part's last byte is there a repack dispatch writes the planes into the
 * part's own buffer and the staging buffer is released (so at most the parts in flight, usually one,
 * take memory twice).
 */
class PlanarUploader {
  private pipes = new Map<WeightType, GPUComputePipeline>();
  private open = new Map<GPUBuffer, { staging: GPUBuffer; filled: number; rawBytes: number }>();
  constructor(private readonly device: GPUDevice) {}

  /** Compiles the repack kernel of every planar type among `weights`. */
  async prepare(weights: GpuWeight[]): Promise<void> {
    for (const w of weights) {
      if (!w.planar || this.pipes.has(w.type)) continue;
      this.pipes.set(w.type, await cachedPipeline(this.device, `repack.${w.type}`, repackWGSL(w.type)));
    }
  }

  /** The staging buffer of `part` (made on first use) holding its raw bytes. */
  staging(w: GpuWeight, part: GpuWeight['parts'][number]): GPUBuffer {
    let s = this.open.get(part.buffer);
    if (!s) {
      const rawBytes = part.rowCount * rowBytes(w.type, w.K);
      s = {
        staging: this.device.createBuffer({
          label: `${w.name} (raw, for repacking)`,
          size: Math.max(16, Math.ceil(rawBytes / 4) * 4),
          usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
        }),
        filled: 0,
        rawBytes,
      };
      this.open.set(part.buffer, s);
    }
    return s.staging;
  }

  /** Counts `n` more raw bytes of `part` written; repacks it when it is complete. */
  advance(w: GpuWeight, part: GpuWeight['parts'][number], n: number): void {
    const s = this.open.get(part.buffer);
    if (!s) throw new Error(`no staging buffer for ${w.name}`);
    s.filled += n;
    if (s.filled < s.rawBytes) return;
    const nBlocks = (part.rowCount * w.K) / WEIGHT_BLOCK[w.type].size;
    const pipe = this.pipes.get(w.type)!;
    const params = this.device.createBuffer({
      label: 'repack params',
      size: 16,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    this.device.queue.writeBuffer(params, 0, repackParams(nBlocks));
    const enc = this.device.createCommandEncoder({ label: `repack ${w.name}` });
    const pass = enc.beginComputePass();
    pass.setPipeline(pipe);
    pass.setBindGroup(
      0,
      this.device.createBindGroup({
        layout: pipe.getBindGroupLayout(0),
        entries: [params, s.staging, part.buffer].map((buffer, binding) => ({
          binding,
          resource: { buffer },
        })),
      }),
    );
    const [x, y] = repackWorkgroups(nBlocks, w.type);
    pass.dispatchWorkgroups(x, y);
    pass.end();
    this.device.queue.submit([enc.finish()]);
    // Destroying after the submit is safe: the buffers are freed once the queued work is done.
    s.staging.destroy();
    params.destroy();
    this.open.delete(part.buffer);
  }

  /** @throws EngineError('gguf_invalid') when a planar part did not receive all its bytes. */
  checkDone(): void {
    if (this.open.size > 0) {
      this.destroy();
      throw new EngineError('gguf_invalid', 'the file ended before every weight was complete');
    }
  }

  /** Releases every staging buffer still open (a failed or aborted load). */
  destroy(): void {
    for (const s of this.open.values()) s.staging.destroy();
    this.open.clear();
  }
}
