/**
 * The roofline: what the device's memory and arithmetic allow, measured with our own WebGPU kernels, and
 * how close decode and prefill come to it. GPUDevice in, no DOM (page, worker or Node through Dawn).
 *
 * - {@link measureBandwidth}: a kernel reads a large buffer (up to 256 MiB, capped by the device's limits;
 *   64 MiB on a software adapter) with `vec4<u32>` loads and adds everything into one 32-bit sum. The sum
 *   is checked against the same sum computed on the CPU, so the reads cannot be optimized away.
 * - {@link measureMatmul}: a tiled f32 matrix multiply (64×64 tiles, 4×4 outputs per thread), checked
 *   against a float64 CPU product on sampled entries.
 *
 * Both time with `timestamp-query` when the device has it (GPU time of the pass), else with the wall clock
 * around submit → `onSubmittedWorkDone` over several kernel launches, and keep the best of N trials.
 *
 * Then {@link decodeBytesPerToken} estimates bytes read per decoded token (weights + KV cache), and
 * {@link rooflineFraction} says which share of the measured bandwidth decode reached.
 */
import type { ModelInfo } from '../core/types.ts';
import { kvTypeBytes } from '../core/validate.ts';
import type { BenchRoofline } from './types.ts';

/** How a kernel was timed. */
export type TimingMethod = 'timestamp-query' | 'wall-clock';

/** {@link measureBandwidth}'s answer. */
export interface BandwidthResult {
  /** Best read bandwidth, GB/s (1e9 bytes/s). */
  GBs: number;
  /** Bytes of the buffer read per kernel launch. */
  bytes: number;
  /** Kernel launches per trial. */
  launches: number;
  /** Trials timed (best kept). */
  trials: number;
  /** Best trial's time, ms. */
  bestMs: number;
  timing: TimingMethod;
  /** The GPU's 32-bit sum of one launch (equal to the CPU's, or the measurement throws). */
  checksum: number;
}

/** {@link measureMatmul}'s answer. */
export interface MatmulResult {
  /** Best throughput, GFLOP/s (2·M·N·K flops per product). */
  GFLOPs: number;
  /** Square matrix size. */
  n: number;
  launches: number;
  trials: number;
  bestMs: number;
  timing: TimingMethod;
  /** Largest relative error of the sampled entries against float64. */
  maxRelError: number;
}

/** Options shared by both measurements. */
export interface MeasureOptions {
  /** Timed trials after one warm-up (default 5). */
  trials?: number;
  /** Treat the device as a software adapter (smaller problem); default: read from `device.adapterInfo`. */
  software?: boolean;
  /** Aim for trials of about this many ms by repeating launches (default 20; 0 = one launch). */
  targetTrialMs?: number;
}

const SOFTWARE = /swiftshader|llvmpipe|lavapipe|softpipe|\bwarp\b/i;

/** True when the device looks like a software (CPU) adapter. */
export function isSoftwareDevice(device: GPUDevice): boolean {
  const info = (device as { adapterInfo?: GPUAdapterInfo & { isFallbackAdapter?: boolean } }).adapterInfo;
  if (!info) return false;
  if (info.isFallbackAdapter) return true;
  return SOFTWARE.test([info.vendor, info.architecture, info.device, info.description].join(' '));
}

const MiB = 1024 * 1024;
const WG = 256;

/** The fill kernel's hash, in JS (u32 arithmetic, equal to the WGSL `hash`). */
export function hashU32(i: number): number {
  let x = Math.imul(i, 0x9e3779b1);
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  return x >>> 0;
}

/** Sum mod 2^32 of hashU32(0..n−1). */
export function hashSumU32(n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s + hashU32(i)) | 0;
  return s >>> 0;
}

const HASH_WGSL = /* wgsl */ `
fn hash(i: u32) -> u32 {
  var x = i * 0x9e3779b1u;
  x = x ^ (x >> 16u);
  x = x * 0x85ebca6bu;
  x = x ^ (x >> 13u);
  return x;
}`;

function fillShader(n4: number): string {
  return /* wgsl */ `${HASH_WGSL}
@group(0) @binding(0) var<storage, read_write> data: array<vec4<u32>>;
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = g.x + g.y * nw.x * ${WG}u;
  if (i >= ${n4}u) { return; }
  let b = i * 4u;
  data[i] = vec4<u32>(hash(b), hash(b + 1u), hash(b + 2u), hash(b + 3u));
}`;
}

/** Slots the read kernel spreads its atomic adds over (no barrier, little contention). */
const SUM_SLOTS = 1024;

/**
 * Reads `data` once: thread t of `nWg` workgroups of `wg` reads vec4s t, t + S, t + 2S, … (S = all
 * threads; four independent loads per iteration), sums them, and adds its sum into `out[t % 1024]`. No
 * barrier: on software adapters barriers cost more than the reads.
 */
function readShader(wg: number, nWg: number, iters: number): string {
  const S = nWg * wg;
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read> data: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> out: array<atomic<u32>, ${SUM_SLOTS}>;
@compute @workgroup_size(${wg})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  var a0 = vec4<u32>(0u);
  var a1 = vec4<u32>(0u);
  var a2 = vec4<u32>(0u);
  var a3 = vec4<u32>(0u);
  var i = g.x;
  for (var k = 0u; k < ${iters}u; k++) {
    a0 += data[i];
    a1 += data[i + ${S}u];
    a2 += data[i + ${2 * S}u];
    a3 += data[i + ${3 * S}u];
    i += ${4 * S}u;
  }
  let v = (a0 + a1) + (a2 + a3);
  atomicAdd(&out[g.x % ${SUM_SLOTS}u], (v.x + v.y) + (v.z + v.w));
}`;
}

/** Timestamp plumbing for one compute pass per trial. */
class PassTimer {
  readonly qs?: GPUQuerySet;
  private readonly resolveBuf?: GPUBuffer;
  private readonly readBuf?: GPUBuffer;
  constructor(device: GPUDevice) {
    if (!device.features.has('timestamp-query')) return;
    this.qs = device.createQuerySet({ type: 'timestamp', count: 2, label: 'roofline.timestamps' });
    this.resolveBuf = device.createBuffer({
      size: 16,
      usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
      label: 'roofline.ts-resolve',
    });
    this.readBuf = device.createBuffer({
      size: 16,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      label: 'roofline.ts-read',
    });
  }
  passDescriptor(label: string): GPUComputePassDescriptor {
    return this.qs
      ? {
          label,
          timestampWrites: { querySet: this.qs, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 },
        }
      : { label };
  }
  resolve(enc: GPUCommandEncoder): void {
    if (!this.qs || !this.resolveBuf || !this.readBuf) return;
    enc.resolveQuerySet(this.qs, 0, 2, this.resolveBuf, 0);
    enc.copyBufferToBuffer(this.resolveBuf, 0, this.readBuf, 0, 16);
  }
  /** GPU ms of the last pass, or undefined (no timestamps, or a zero/negative span from quantization). */
  async read(): Promise<number | undefined> {
    if (!this.readBuf) return undefined;
    await this.readBuf.mapAsync(GPUMapMode.READ);
    const t = new BigInt64Array(this.readBuf.getMappedRange().slice(0));
    this.readBuf.unmap();
    const ns = Number(t[1] - t[0]);
    return ns > 0 ? ns / 1e6 : undefined;
  }
  destroy(): void {
    this.qs?.destroy();
    this.resolveBuf?.destroy();
    this.readBuf?.destroy();
  }
}

/**
 * Runs `encode` (one compute pass of `launches` dispatches) for one warm-up and `trials` timed trials,
 * growing `launches` after the warm-up so a trial takes about `targetMs`. Returns the best time per launch.
 */
async function timeTrials(
  device: GPUDevice,
  encodePass: (pass: GPUComputePassEncoder, launches: number) => void,
  before: ((enc: GPUCommandEncoder) => void) | undefined,
  opts: { trials: number; targetMs: number; maxLaunches: number; label: string },
): Promise<{ bestMs: number; launches: number; timing: TimingMethod }> {
  const timer = new PassTimer(device);
  let timing: TimingMethod = timer.qs ? 'timestamp-query' : 'wall-clock';
  const trial = async (launches: number): Promise<number> => {
    const enc = device.createCommandEncoder({ label: opts.label });
    before?.(enc);
    const pass = enc.beginComputePass(timer.passDescriptor(opts.label));
    encodePass(pass, launches);
    pass.end();
    timer.resolve(enc);
    const t0 = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    const wall = performance.now() - t0;
    const gpu = await timer.read();
    if (gpu === undefined) timing = 'wall-clock';
    return timing === 'timestamp-query' && gpu !== undefined ? gpu : wall;
  };
  try {
    const first = await trial(1);
    const launches =
      opts.targetMs > 0
        ? Math.max(1, Math.min(opts.maxLaunches, Math.round(opts.targetMs / Math.max(first, 1e-3))))
        : 1;
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < opts.trials; i++) best = Math.min(best, (await trial(launches)) / launches);
    return { bestMs: best, launches, timing };
  } finally {
    timer.destroy();
  }
}

async function readU32(device: GPUDevice, src: GPUBuffer, count: number): Promise<Uint32Array> {
  const rb = device.createBuffer({
    size: count * 4,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    label: 'roofline.readback',
  });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, rb, 0, count * 4);
  device.queue.submit([enc.finish()]);
  await rb.mapAsync(GPUMapMode.READ);
  const out = new Uint32Array(rb.getMappedRange().slice(0));
  rb.unmap();
  rb.destroy();
  return out;
}

/** Options for {@link measureBandwidth}. */
export interface BandwidthOptions extends MeasureOptions {
  /** Bytes to read per launch (rounded down to the kernel's granularity); default 256 MiB, 64 MiB on software. */
  bytes?: number;
}

/**
 * Measures read bandwidth: best of N trials of a kernel that reads a whole buffer once per launch.
 * @throws Error when the GPU's checksum differs from the CPU's (the kernel did not read what it should).
 */
export async function measureBandwidth(
  device: GPUDevice,
  opts: BandwidthOptions = {},
): Promise<BandwidthResult> {
  const software = opts.software ?? isSoftwareDevice(device);
  const cap = Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
  const want = Math.min(opts.bytes ?? (software ? 64 : 256) * MiB, cap);
  const n4Max = Math.floor(want / 16);
  // Threads: enough to fill a GPU (≥ 16 vec4 loads each); few small workgroups on a CPU's software adapter.
  const rwg = software ? 64 : WG;
  const nWg = Math.max(
    1,
    Math.min(
      software ? 16 : 4096,
      device.limits.maxComputeWorkgroupsPerDimension,
      Math.floor(n4Max / (rwg * 16)),
    ),
  );
  const iters = Math.floor(n4Max / (nWg * rwg * 4));
  if (iters < 1) throw new RangeError(`bandwidth buffer too small: ${want} bytes`);
  const n4 = iters * nWg * rwg * 4;
  const bytes = n4 * 16;

  const data = device.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE, label: 'roofline.bw-data' });
  const out = device.createBuffer({
    size: SUM_SLOTS * 4,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    label: 'roofline.bw-sum',
  });
  try {
    // Fill on the GPU with hash(element index).
    const fill = device.createComputePipeline({
      layout: 'auto',
      compute: { module: device.createShaderModule({ code: fillShader(n4), label: 'roofline.fill' }) },
      label: 'roofline.fill',
    });
    const totalWg = Math.ceil(n4 / WG);
    const gx = Math.min(totalWg, device.limits.maxComputeWorkgroupsPerDimension);
    const gy = Math.ceil(totalWg / gx);
    {
      const enc = device.createCommandEncoder({ label: 'roofline.fill' });
      const pass = enc.beginComputePass({ label: 'roofline.fill' });
      pass.setPipeline(fill);
      pass.setBindGroup(
        0,
        device.createBindGroup({
          layout: fill.getBindGroupLayout(0),
          entries: [{ binding: 0, resource: { buffer: data } }],
        }),
      );
      pass.dispatchWorkgroups(gx, gy);
      pass.end();
      device.queue.submit([enc.finish()]);
    }
    const read = device.createComputePipeline({
      layout: 'auto',
      compute: {
        module: device.createShaderModule({ code: readShader(rwg, nWg, iters), label: 'roofline.read' }),
      },
      label: 'roofline.read',
    });
    const bg = device.createBindGroup({
      layout: read.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: data } },
        { binding: 1, resource: { buffer: out } },
      ],
    });
    let lastLaunches = 1;
    const t = await timeTrials(
      device,
      (pass, launches) => {
        lastLaunches = launches;
        pass.setPipeline(read);
        pass.setBindGroup(0, bg);
        for (let i = 0; i < launches; i++) pass.dispatchWorkgroups(nWg);
      },
      (enc) => enc.clearBuffer(out),
      {
        trials: opts.trials ?? 5,
        targetMs: opts.targetTrialMs ?? (software ? 0 : 20),
        maxLaunches: 64,
        label: 'roofline.read',
      },
    );
    let gpuSum = 0;
    for (const v of await readU32(device, out, SUM_SLOTS)) gpuSum = (gpuSum + v) | 0;
    gpuSum >>>= 0;
    const oneSum = hashSumU32(n4 * 4);
    const expected = Math.imul(oneSum, lastLaunches) >>> 0;
    if (gpuSum !== expected)
      throw new Error(
        `bandwidth kernel checksum mismatch: GPU ${gpuSum}, CPU ${expected} (${lastLaunches} launches of ${bytes} bytes)`,
      );
    return {
      GBs: bytes / (t.bestMs * 1e6),
      bytes,
      launches: t.launches,
      trials: opts.trials ?? 5,
      bestMs: t.bestMs,
      timing: t.timing,
      checksum: oneSum,
    };
  } finally {
    data.destroy();
    out.destroy();
  }
}

/**
 * Tiled f32 matmul C[n×n] = A[n×n]·B[n×n], row-major, n a multiple of 4·T: T×T threads per workgroup, each
 * computing 4×4 outputs of a 4T×4T tile, through workgroup tiles of 16 k-steps.
 */
function matmulShader(n: number, T: number): string {
  const perThread = 16 / T; // vec4 loads per thread per tile and operand
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
var<workgroup> As: array<vec4<f32>, ${16 * T}>; // [16 k][T row-quads]: the A tile transposed
var<workgroup> Bs: array<vec4<f32>, ${16 * T}>; // [16 k][T col-quads]
@compute @workgroup_size(${T}, ${T})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let row0 = wg.y * ${4 * T}u;
  let col0 = wg.x * ${4 * T}u;
  var c0 = vec4<f32>(0.0);
  var c1 = vec4<f32>(0.0);
  var c2 = vec4<f32>(0.0);
  var c3 = vec4<f32>(0.0);
  for (var k0 = 0u; k0 < ${n}u; k0 += 16u) {
    for (var e = 0u; e < ${perThread}u; e++) {
      let idx = li + e * ${T * T}u;
      let q = idx % ${T}u;
      let k = idx / ${T}u;
      let ab = (row0 + q * 4u) * ${n}u + k0 + k;
      As[idx] = vec4<f32>(A[ab], A[ab + ${n}u], A[ab + ${2 * n}u], A[ab + ${3 * n}u]);
      let bb = (k0 + k) * ${n}u + col0 + q * 4u;
      Bs[idx] = vec4<f32>(B[bb], B[bb + 1u], B[bb + 2u], B[bb + 3u]);
    }
    workgroupBarrier();
    for (var k = 0u; k < 16u; k++) {
      let a = As[k * ${T}u + l.y];
      let b = Bs[k * ${T}u + l.x];
      c0 = fma(vec4<f32>(a.x), b, c0);
      c1 = fma(vec4<f32>(a.y), b, c1);
      c2 = fma(vec4<f32>(a.z), b, c2);
      c3 = fma(vec4<f32>(a.w), b, c3);
    }
    workgroupBarrier();
  }
  let o = (row0 + l.y * 4u) * ${n}u + col0 + l.x * 4u;
  C[o] = c0.x; C[o + 1u] = c0.y; C[o + 2u] = c0.z; C[o + 3u] = c0.w;
  C[o + ${n}u] = c1.x; C[o + ${n + 1}u] = c1.y; C[o + ${n + 2}u] = c1.z; C[o + ${n + 3}u] = c1.w;
  C[o + ${2 * n}u] = c2.x; C[o + ${2 * n + 1}u] = c2.y; C[o + ${2 * n + 2}u] = c2.z; C[o + ${2 * n + 3}u] = c2.w;
  C[o + ${3 * n}u] = c3.x; C[o + ${3 * n + 1}u] = c3.y; C[o + ${3 * n + 2}u] = c3.z; C[o + ${3 * n + 3}u] = c3.w;
}`;
}

/** Options for {@link measureMatmul}. */
export interface MatmulOptions extends MeasureOptions {
  /** Square size, a multiple of 64 (default 2048; 256 on a software adapter). */
  n?: number;
  /** Threads per workgroup side, 8 or 16 (default 16; 8 on a software adapter, where small workgroups run faster). */
  tile?: 8 | 16;
}

/**
 * Measures f32 matmul throughput: best of N trials of a tiled n×n×n product (2n³ flops per launch).
 * @throws Error when sampled entries differ from the float64 product by more than 1e-3 relative.
 */
export async function measureMatmul(device: GPUDevice, opts: MatmulOptions = {}): Promise<MatmulResult> {
  const software = opts.software ?? isSoftwareDevice(device);
  let n = opts.n ?? (software ? 256 : 2048);
  const cap = Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
  while (n > 64 && n * n * 4 > cap) n /= 2;
  if (n % 64 !== 0 || n < 64) throw new RangeError(`matmul size must be a multiple of 64, got ${n}`);
  const T = opts.tile ?? (software ? 8 : 16);
  // Small integers / 64: products and sums are exact in f32 for the checks below.
  const rand = (seed: number) => {
    const m = new Float32Array(n * n);
    for (let i = 0; i < m.length; i++) m[i] = ((hashU32(i + seed) % 17) - 8) / 64;
    return m;
  };
  const a = rand(0x1234567);
  const b = rand(0x7654321);
  const mk = (label: string, usage: number) => device.createBuffer({ size: n * n * 4, usage, label });
  const A = mk('roofline.mm-A', GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
  const B = mk('roofline.mm-B', GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
  const C = mk('roofline.mm-C', GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
  try {
    device.queue.writeBuffer(A, 0, a);
    device.queue.writeBuffer(B, 0, b);
    const pipe = device.createComputePipeline({
      layout: 'auto',
      compute: { module: device.createShaderModule({ code: matmulShader(n, T), label: 'roofline.matmul' }) },
      label: 'roofline.matmul',
    });
    const bg = device.createBindGroup({
      layout: pipe.getBindGroupLayout(0),
      entries: [A, B, C].map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    const trials = opts.trials ?? 5;
    const t = await timeTrials(
      device,
      (pass, launches) => {
        pass.setPipeline(pipe);
        pass.setBindGroup(0, bg);
        for (let i = 0; i < launches; i++) pass.dispatchWorkgroups(n / (4 * T), n / (4 * T));
      },
      undefined,
      {
        trials,
        targetMs: opts.targetTrialMs ?? (software ? 0 : 20),
        maxLaunches: 64,
        label: 'roofline.matmul',
      },
    );
    const c = new Float32Array((await readU32(device, C, n * n)).buffer);
    let maxRel = 0;
    for (let s = 0; s < 64; s++) {
      const i = hashU32(s * 2 + 1) % n;
      const j = hashU32(s * 2 + 2) % n;
      let ref = 0;
      for (let k = 0; k < n; k++) ref += a[i * n + k] * b[k * n + j];
      const rel = Math.abs(c[i * n + j] - ref) / Math.max(1, Math.abs(ref));
      if (!(rel <= 1e-3))
        throw new Error(`matmul kernel result wrong at (${i}, ${j}): GPU ${c[i * n + j]}, CPU ${ref}`);
      maxRel = Math.max(maxRel, rel);
    }
    return {
      GFLOPs: (2 * n * n * n) / (t.bestMs * 1e6),
      n,
      launches: t.launches,
      trials,
      bestMs: t.bestMs,
      timing: t.timing,
      maxRelError: maxRel,
    };
  } finally {
    A.destroy();
    B.destroy();
    C.destroy();
  }
}

/** What {@link decodeBytesPerToken} needs: the engine's {@link ModelInfo}, plus facts it may not carry. */
export type DecodeTrafficModel = Pick<
  ModelInfo,
  'nParams' | 'weightBytes' | 'nEmbd' | 'nVocab' | 'nLayers' | 'kvType' | 'kvTypeV'
> & {
  /** K/V width per layer (nHeadKv · headDim); default nEmbd (no GQA: an upper bound). */
  kvDim?: number;
  /** The output projection reuses `token_embd` (then the whole table is read per token); default false. */
  tiedEmbeddings?: boolean;
  /**
   * Bytes per KV-cache element; default from `kvType` and `kvTypeV` (their mean: 4 for f32, 2 for f16, 34/32
   * for q8_0, 18/32 for q4_0), else 4 (an engine that does not say its cache type ran an f32 one).
   */
  kvBytesPerElement?: number;
};

/**
 * Bytes read from memory per decoded token, at `contextUsed` tokens of context: every weight once, except
 * the embedding table, of which only one row is read (unless tied to the output projection), plus the
 * K and V cache of every layer up to the context. The embedding table's share is estimated at the model's
 * mean bytes per parameter.
 */
export function decodeBytesPerToken(m: DecodeTrafficModel, contextUsed: number): number {
  const bytesPerParam = m.nParams > 0 ? m.weightBytes / m.nParams : 4;
  const embdUnread = m.tiedEmbeddings ? 0 : (m.nVocab - 1) * m.nEmbd * bytesPerParam;
  const weights = Math.max(0, m.weightBytes - embdUnread);
  const kv =
    2 *
    m.nLayers *
    Math.max(0, contextUsed) *
    (m.kvDim ?? m.nEmbd) *
    (m.kvBytesPerElement ??
      (m.kvType ? (kvTypeBytes(m.kvType) + kvTypeBytes(m.kvTypeV ?? m.kvType)) / 2 : 4));
  return weights + kv;
}

/** FLOPs per prompt token in prefill, ≈ 2 per weight that multiplies (the embedding lookup does not). */
export function prefillFlopsPerToken(m: DecodeTrafficModel): number {
  const embd = m.tiedEmbeddings ? 0 : m.nVocab * m.nEmbd;
  return 2 * Math.max(0, m.nParams - embd);
}

/**
 * Share of the measured bandwidth that decode used: tokens/s × bytes/token ÷ bandwidth. Can pass 1 when
 * caches hold the weights (a small model) or the estimate is off.
 */
export function rooflineFraction(
  decodeTokensPerSecond: number,
  bytesPerToken: number,
  bandwidthGBs: number,
): number {
  return (decodeTokensPerSecond * bytesPerToken) / (bandwidthGBs * 1e9);
}

/**
 * The result file's `roofline` block from the measurements and the runs' median rates.
 * @param contextUsed mean context length during decode (e.g. prompt tokens + output tokens / 2).
 */
export function buildRoofline(input: {
  model: DecodeTrafficModel;
  bandwidthGBs: number;
  matmulGflops?: number;
  decodeTokensPerSecond: number;
  prefillTokensPerSecond?: number;
  contextUsed: number;
}): BenchRoofline {
  const bytesPerToken = decodeBytesPerToken(input.model, input.contextUsed);
  const r: BenchRoofline = {
    bandwidthGBs: input.bandwidthGBs,
    bytesPerToken,
    fraction: rooflineFraction(input.decodeTokensPerSecond, bytesPerToken, input.bandwidthGBs),
  };
  if (input.matmulGflops !== undefined) {
    r.matmulGflops = input.matmulGflops;
    if (input.prefillTokensPerSecond !== undefined && Number.isFinite(input.prefillTokensPerSecond))
      r.prefillFraction =
        (input.prefillTokensPerSecond * prefillFlopsPerToken(input.model)) / (input.matmulGflops * 1e9);
  }
  return r;
}

/**
 * How the median prefill compares with the measured f32 matmul rate, as words: "N% of it", or past it
 * "N× it", with why a figure over 100% is no error (the rate is a plain f32 matmul; the prefill kernels
 * multiply quantized weights with int8 dot products and shared tiles, which can outrun it).
 */
export function prefillVsMatmulText(fraction: number | undefined, fmtPct: (x: number) => string): string {
  if (fraction === undefined || !Number.isFinite(fraction)) return 'not measured';
  if (fraction <= 1) return `${fmtPct(fraction)} of it`;
  return (
    `${fraction.toFixed(2)}× it: the prefill kernels (int8 dot products on quantized weights, shared tiles) ` +
    'outrun the plain f32 matmul measured, so that rate is a reference here, not a ceiling'
  );
}
