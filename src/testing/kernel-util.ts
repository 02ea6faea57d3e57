/**
 * Shared helpers for the kernel browser tests (`*.browser.test.ts`): one GPUDevice per test file,
 * buffers from typed arrays, running a WGSL compute shader with buffers bound in order (binding i =
 * buffers[i]), reading results back, f16 packing, seeded random data, a tolerance check that names
 * the worst mismatches, and float64 references for the matmul kernels. Test-only: nothing in the engine imports this.
 */

import { dequantizeRow, quantizeRow } from '../gguf/quantize.ts';
import { mulberry32, type Rng, randn } from '../util/prng.ts';
import { createGpuContext, type GpuContext } from '../webgpu/device.ts';
import type { WeightType } from '../webgpu/kernels/common.ts';

let ctx: Promise<GpuContext> | undefined;

/** The test file's GPU context, created on first use and shared by every test in the file. */
export function testGpu(): Promise<GpuContext> {
  ctx ??= createGpuContext();
  return ctx;
}

/** The test file's GPUDevice (see {@link testGpu}). */
export async function testDevice(): Promise<GPUDevice> {
  return (await testGpu()).device;
}

const RW = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/** A storage buffer (also COPY_SRC/COPY_DST) holding `data`, its size rounded up to 4 bytes (≥ 16). */
export function storageFrom(device: GPUDevice, data: ArrayBufferView, label?: string): GPUBuffer {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const size = Math.max(16, Math.ceil(bytes.byteLength / 4) * 4);
  const buf = device.createBuffer({ label, size, usage: RW, mappedAtCreation: true });
  new Uint8Array(buf.getMappedRange()).set(bytes);
  buf.unmap();
  return buf;
}

/** A 16-byte uniform buffer holding `data` (e.g. the Step uniform from `packStep`). */
export function uniformFrom(device: GPUDevice, data: Uint32Array): GPUBuffer {
  const size = Math.max(16, Math.ceil(data.byteLength / 16) * 16);
  const buf = device.createBuffer({
    label: 'uniform',
    size,
    usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    mappedAtCreation: true,
  });
  new Uint32Array(buf.getMappedRange()).set(data);
  buf.unmap();
  return buf;
}

const pipelines = new Map<string, Promise<GPUComputePipeline>>();

/** Compiles `code` (entry point `main`, layout 'auto'), once per source; rejects with the compiler messages. */
export function pipelineFor(device: GPUDevice, code: string): Promise<GPUComputePipeline> {
  let p = pipelines.get(code);
  if (!p) {
    const module = device.createShaderModule({ code });
    p = device
      .createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } })
      .catch(async (e) => {
        const info = await module.getCompilationInfo();
        const msgs = info.messages.map((m) => `${m.type} ${m.lineNum}:${m.linePos} ${m.message}`).join('\n');
        throw new Error(`WGSL failed to compile: ${e}\n${msgs}\n--- source ---\n${numbered(code)}`);
      });
    pipelines.set(code, p);
  }
  return p;
}

function numbered(code: string): string {
  return code
    .split('\n')
    .map((l, i) => `${String(i + 1).padStart(4)} ${l}`)
    .join('\n');
}

/**
 * Runs the compute shader `code` once with `buffers` bound in order to @group(0) @binding(0..), over
 * `workgroups` = [x, y?, z?], and waits for the queue. Validation errors reject.
 */
export async function runWGSL(
  device: GPUDevice,
  code: string,
  buffers: GPUBuffer[],
  workgroups: [number, number?, number?],
): Promise<void> {
  const pipeline = await pipelineFor(device, code);
  device.pushErrorScope('validation');
  const group = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
  });
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(workgroups[0], workgroups[1] ?? 1, workgroups[2] ?? 1);
  pass.end();
  device.queue.submit([enc.finish()]);
  const err = await device.popErrorScope();
  if (err) throw new Error(`WebGPU validation error: ${err.message}`);
  await device.queue.onSubmittedWorkDone();
}

async function readBytes(device: GPUDevice, src: GPUBuffer, bytes: number): Promise<ArrayBuffer> {
  const size = Math.ceil(bytes / 4) * 4;
  const rb = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, rb, 0, size);
  device.queue.submit([enc.finish()]);
  await rb.mapAsync(GPUMapMode.READ);
  const out = rb.getMappedRange().slice(0);
  rb.destroy();
  return out;
}

/** Reads the first `n` f32 of `buf` (default: the whole buffer). */
export async function readF32(device: GPUDevice, buf: GPUBuffer, n = buf.size / 4): Promise<Float32Array> {
  return new Float32Array(await readBytes(device, buf, n * 4));
}

/** Reads the first `n` u32 of `buf` (default: the whole buffer). */
export async function readU32(device: GPUDevice, buf: GPUBuffer, n = buf.size / 4): Promise<Uint32Array> {
  return new Uint32Array(await readBytes(device, buf, n * 4));
}

/** A fresh seeded generator; `seed` goes into failure messages so a failing case can be replayed. */
export function freshRng(seed = Math.floor(Math.random() * 2 ** 32)): { seed: number; rng: Rng } {
  return { seed, rng: mulberry32(seed) };
}

/** `n` normal samples (std `std`), none exactly zero. */
export function randomF32(rng: Rng, n: number, std = 1): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let v = 0;
    while (v === 0) v = Math.fround(randn(rng, 0, std));
    out[i] = v;
  }
  return out;
}

/** A uniform integer in [0, n). */
export function randInt(rng: Rng, n: number): number {
  return Math.floor(rng() * n);
}

function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** IEEE binary16 bits of `x`, rounded to nearest even (overflow → ±Inf, NaN → quiet NaN). */
export function f16Bits(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00;
  if (a < 2 ** -14) return sign | roundHalfEven(a * 2 ** 24); // subnormal (1024 carries into the exponent)
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  let m = roundHalfEven((a / 2 ** e - 1) * 1024);
  if (m === 1024) {
    m = 0;
    e++;
  }
  return sign | ((e + 15) << 10) | m;
}

/** The value of binary16 bits `h`. */
export function f16Value(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? Number.NaN : s * Number.POSITIVE_INFINITY;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/**
 * Packs `values` as F16 the way ggml stores them (little-endian, element 2j in the low half of u32 word
 * j): `words` for the GPU, `rounded` the values the GPU will read (for the reference).
 */
export function packF16(values: ArrayLike<number>): { words: Uint32Array; rounded: Float64Array } {
  const n = values.length;
  const halves = new Uint16Array(Math.ceil(n / 2) * 2);
  const rounded = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    halves[i] = f16Bits(values[i]);
    rounded[i] = f16Value(halves[i]);
  }
  return { words: new Uint32Array(halves.buffer), rounded };
}

/**
 * Throws unless |got[i] − ref[i]| ≤ tol[i] for every i (and got[i] is finite), naming the count and
 * the worst mismatches (by error / tolerance) with `what` (which should carry the seed).
 */
export function assertClose(
  what: string,
  got: ArrayLike<number>,
  ref: ArrayLike<number>,
  tol: ArrayLike<number> | number,
): void {
  if (got.length !== ref.length) throw new Error(`${what}: length ${got.length} ≠ reference ${ref.length}`);
  const bad: { i: number; r: number }[] = [];
  for (let i = 0; i < ref.length; i++) {
    const t = typeof tol === 'number' ? tol : tol[i];
    const err = Math.abs(got[i] - ref[i]);
    if (!(err <= t)) bad.push({ i, r: Number.isFinite(err) ? err / t : Number.POSITIVE_INFINITY });
  }
  if (bad.length === 0) return;
  bad.sort((a, b) => b.r - a.r);
  const lines = bad.slice(0, 8).map(({ i }) => {
    const t = typeof tol === 'number' ? tol : tol[i];
    return `  [${i}] gpu ${got[i]} ref ${ref[i]} err ${Math.abs(got[i] - ref[i]).toExponential(3)} tol ${t.toExponential(3)}`;
  });
  throw new Error(`${what}: ${bad.length}/${ref.length} outside tolerance\n${lines.join('\n')}`);
}

/** Throws unless `got` equals `ref` element for element (exact copies, indices). */
export function assertEqual(what: string, got: ArrayLike<number>, ref: ArrayLike<number>): void {
  assertClose(what, got, ref, 0);
}

/**
 * One output of a matrix × vector product in float64, for the matmul kernels' references: row `r` of the
 * weights `w` [N, K] (row-major) dotted with token `t` of the activations `xn` [T, K]. Returns
 * [Σ_k w·x, Σ_k |w·x|]: the value and the size of its terms, which bounds the f32 accumulation error.
 */
export function refDot(
  w: ArrayLike<number>,
  r: number,
  xn: ArrayLike<number>,
  t: number,
  K: number,
): [number, number] {
  let s = 0;
  let a = 0;
  for (let k = 0; k < K; k++) {
    const p = w[r * K + k] * xn[t * K + k];
    s += p;
    a += Math.abs(p);
  }
  return [s, a];
}

/**
 * The activations x [T, K] in float64 as a matmul kernel reads them: unchanged without `g`, else each token
 * RMS-normalised as ggml_rms_norm (x / √(mean(x²) + eps)) and multiplied by the norm weight `g` [K].
 */
export function normed(x: Float32Array, T: number, K: number, eps: number, g?: Float32Array): Float64Array {
  const out = Float64Array.from(x);
  if (!g) return out;
  for (let t = 0; t < T; t++) {
    let ss = 0;
    for (let k = 0; k < K; k++) ss += x[t * K + k] ** 2;
    const inv = 1 / Math.sqrt(ss / K + eps);
    for (let k = 0; k < K; k++) out[t * K + k] = x[t * K + k] * inv * g[k];
  }
  return out;
}

/**
 * N random rows of K weights (std 1/√K) quantized to `type` by our ggml-exact quantizer: the bytes as the
 * GPU gets them (rows back to back, padded to 16 bytes) and the values the GPU must read (ggml's
 * dequantization, float64) [N, K].
 */
export function quantizedRows(
  type: WeightType,
  K: number,
  N: number,
  rng: () => number,
): { bytes: Uint8Array; w: Float64Array } {
  const rows: Uint8Array[] = [];
  const w = new Float64Array(K * N);
  for (let r = 0; r < N; r++) {
    const q = quantizeRow(type, randomF32(rng, K, 1 / Math.sqrt(K)));
    rows.push(q);
    w.set(dequantizeRow(type, q, K), r * K);
  }
  const bytes = new Uint8Array(Math.ceil(rows.reduce((a, b) => a + b.length, 0) / 16) * 16);
  let o = 0;
  for (const q of rows) {
    bytes.set(q, o);
    o += q.length;
  }
  return { bytes, w };
}

/**
 * x [T, K] as the integer-dot path sees it (float64): x·g rounded to int8 per 32-value chunk with one
 * scale amax / 127 (ggml's quantize_row_q8_0), times 1/rms; and per chunk the size of one rounding step
 * (a value that lands on a half may round either way in f32).
 */
export function int8Activations(x: Float32Array, T: number, K: number, g?: Float32Array, eps = 1e-5) {
  const out = new Float64Array(T * K);
  const step = new Float64Array(T * K);
  for (let t = 0; t < T; t++) {
    let inv = 1;
    if (g) {
      let ss = 0;
      for (let k = 0; k < K; k++) ss += x[t * K + k] ** 2;
      inv = 1 / Math.sqrt(ss / K + eps);
    }
    for (let c = 0; c < K; c += 32) {
      let am = 0;
      const xg = Array.from({ length: 32 }, (_, k) => x[t * K + c + k] * (g ? g[c + k] : 1));
      for (const v of xg) am = Math.max(am, Math.abs(v));
      const d = am / 127;
      for (let k = 0; k < 32; k++) {
        out[t * K + c + k] = (d > 0 ? Math.round(xg[k] / d) * d : 0) * inv;
        step[t * K + c + k] = d * inv;
      }
    }
  }
  return { out, step };
}
