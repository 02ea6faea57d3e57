/**
 * The load-time self-test of the prefill attention on subgroup matrices (attention-sgmat.ts), as
 * sgmat-check.ts is the matmul tile's: before the first use on an adapter, for the model's attention
 * shape (GQA group, head size, KV cache types, soft-cap, sliding window) on two KV heads, the candidate
 * runs two batches beside the float prefill attention (attention-prefill.ts, `tiled`) on the same
 * random inputs: 37 tokens at position 0 (a partial token tile, the causal diagonal from the first
 * position) and 19 tokens after 45 cached positions (a depth that is not a multiple of any tile). Every
 * output must satisfy |candidate − float| ≤ {@link ATTENTION_CHECK_TOLERANCE} · rms(float) (f16 operands
 * give ~1e-3 of that; a position off by one ~0.1–1). A compile failure, a non-finite output or a mismatch
 * fails it with the reason, and the caller keeps the float kernel.
 */
import { quantizeRow } from '../../gguf/quantize.ts';
import { configName, type GpuContext } from '../device.ts';
import type { KvType } from './attention.ts';
import { prefillAttentionWGSL, prefillAttentionWorkgroups } from './attention-prefill.ts';
import {
  prefillAttentionSgmatWGSL,
  type SgmatAttentionOptions,
  type SgmatAttentionTile,
  sgmatAttentionPlan,
  sgmatAttentionWorkgroups,
} from './attention-sgmat.ts';
import { packStep, scratchBuffers } from './common.ts';
import { CompileError, compileChecked, rng32, type TileCheck } from './sgmat-check.ts';

/** Largest |candidate − float kernel| allowed, as a fraction of the float kernel's rms output. */
export const ATTENTION_CHECK_TOLERANCE = 0.02;

/** The self-test's batches: [tokens, cached positions before them]. */
export const ATTENTION_CHECK_RUNS: readonly (readonly [number, number])[] = [
  [37, 0],
  [19, 45],
];

/** A model's prefill attention, as the self-test runs it (the KV heads are the test's own). */
export type AttentionShape = Omit<SgmatAttentionOptions, 'tile' | 'kvTile' | 'maxWorkgroupBytes'>;

/** A candidate kernel: its WGSL for a problem, and its grid for T tokens. */
export interface AttentionCandidate {
  wgsl: (o: AttentionShape) => string;
  workgroups: (o: AttentionShape, T: number) => [number, number];
}

/** A cache [rows, kvDim] of random values (std 1) in `kv`'s layout (ggml rows back to back). */
function randomCache(kv: KvType, rows: number, kvDim: number, rng: () => number): Uint8Array {
  const x = Float32Array.from({ length: rows * kvDim }, () => (rng() * 2 - 1) * Math.sqrt(3));
  if (kv === 'f32') return new Uint8Array(x.buffer);
  const type = kv === 'f16' ? 'F16' : kv === 'q8_0' ? 'Q8_0' : 'Q4_0';
  const parts = Array.from({ length: rows }, (_, r) =>
    quantizeRow(type, x.subarray(r * kvDim, (r + 1) * kvDim)),
  );
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Runs the self-test of `candidate` on `gpu` for `model`'s attention (its GQA group, head size, cache
 * types, scale, soft-cap; a window of 16 positions where the model has one, so it masks here) against the
 * float prefill attention, on two KV heads and {@link ATTENTION_CHECK_RUNS}.
 * @returns `{ ok: true }`, or `{ ok: false, reason }` naming the batch, the first mismatching output or the
 *   compile error; never throws for the candidate's faults (a lost device still rejects).
 */
export async function checkAttentionAgainstFloat(
  gpu: GpuContext,
  candidate: AttentionCandidate,
  model: AttentionShape,
): Promise<TileCheck> {
  const { device } = gpu;
  const G = model.nHead / model.nHeadKv;
  const o: AttentionShape = {
    ...model,
    nHeadKv: 2,
    nHead: 2 * G,
    ...(model.window ? { window: 16 } : {}),
  };
  const HD = o.headDim;
  const qDim = o.nHead * HD;
  const kvDim = o.nHeadKv * HD;
  const { buf, destroy } = scratchBuffers(device, 'attention-check');
  let cases = 0;
  try {
    const compile = (code: string) => compileChecked(device, code, 'attention-check');
    const float = { ...o, layout: { kind: 'tiled' as const } };
    const refPipeline = await compile(prefillAttentionWGSL(float));
    let candPipeline: GPUComputePipeline;
    try {
      candPipeline = await compile(candidate.wgsl(o));
    } catch (e) {
      if (e instanceof CompileError) return { ok: false, cases, reason: `compile failed: ${e.message}` };
      throw e;
    }
    for (const [ri, [T, pos0]] of ATTENTION_CHECK_RUNS.entries()) {
      const rng = rng32(HD * 131 + G * 17 + ri);
      const nCtx = pos0 + T + 3;
      const inputs = [
        buf(packStep(T, pos0), GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST),
        buf(Float32Array.from({ length: T * qDim }, () => (rng() * 2 - 1) * Math.sqrt(3))),
        buf(randomCache(o.kvType, nCtx, kvDim, rng)),
        buf(randomCache(o.vKvType ?? o.kvType, nCtx, kvDim, rng)),
      ];
      const run = async (p: GPUComputePipeline, grid: [number, number]) => {
        const out = buf(
          new Float32Array(T * qDim).fill(Number.NaN),
          GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
        );
        device.pushErrorScope('validation');
        const group = device.createBindGroup({
          layout: p.getBindGroupLayout(0),
          entries: [...inputs, out].map((buffer, binding) => ({ binding, resource: { buffer } })),
        });
        const read = buf(T * qDim * 4, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
        const enc = device.createCommandEncoder({ label: 'attention-check' });
        const pass = enc.beginComputePass();
        pass.setPipeline(p);
        pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(grid[0], grid[1]);
        pass.end();
        enc.copyBufferToBuffer(out, 0, read, 0, T * qDim * 4);
        device.queue.submit([enc.finish()]);
        const err = await device.popErrorScope();
        if (err) throw new CompileError(err.message);
        await read.mapAsync(GPUMapMode.READ);
        const r = new Float32Array(read.getMappedRange().slice(0));
        read.unmap();
        return r;
      };
      const ref = await run(refPipeline, prefillAttentionWorkgroups(float, T));
      const what = `${T} tokens at ${pos0}`;
      let got: Float32Array;
      try {
        got = await run(candPipeline, candidate.workgroups(o, T));
      } catch (e) {
        if (e instanceof CompileError) return { ok: false, cases, reason: `${what}: ${e.message}` };
        throw e;
      }
      cases++;
      let ss = 0;
      for (const v of ref) ss += v * v;
      const tol = ATTENTION_CHECK_TOLERANCE * Math.sqrt(ss / ref.length);
      for (let i = 0; i < ref.length; i++) {
        if (!(Math.abs(got[i] - ref[i]) <= tol)) {
          const t = Math.floor(i / qDim);
          const h = Math.floor((i % qDim) / HD);
          return {
            ok: false,
            cases,
            reason: `${what}: token ${t}, head ${h}, dim ${i % HD}: ${got[i]} against the float kernel's ${ref[i]} (tolerance ${tol.toPrecision(3)})`,
          };
        }
      }
    }
    return { ok: true, cases };
  } finally {
    destroy();
  }
}

/**
 * The subgroup-matrix prefill attention for an adapter and a model's attention, self-tested
 * ({@link checkAttentionAgainstFloat}), or why none: `tile` (and its `kvTile`) the first of the adapter's
 * usable configurations (device.ts `SubgroupMatrixSupport.usable`, best first) that takes the shape and
 * passes; `reason` where none does; `selfTest` each configuration's verdict (or why it was not tried).
 */
export interface SgmatAttentionChoice {
  tile?: SgmatAttentionTile;
  kvTile?: number;
  reason?: string;
  selfTest: { config: string; ok: boolean; reason?: string }[];
  /** Where the load's timed trial ran (kernel-plan.ts `resolvePrefillAttention`): each kernel's ms per dispatch. */
  trial?: AttentionTrial[];
}

/** The kernel for a configuration: its WGSL and grid (tests inject doubles: the emulator, stand-ins). */
export interface SgmatAttentionKernel {
  wgsl: (o: SgmatAttentionOptions) => string;
  workgroups: (o: SgmatAttentionOptions, T: number) => [number, number];
}

/** The real kernel (attention-sgmat.ts). */
export const SGMAT_ATTENTION: SgmatAttentionKernel = {
  wgsl: prefillAttentionSgmatWGSL,
  workgroups: sgmatAttentionWorkgroups,
};

const cache = new Map<string, SgmatAttentionChoice>();

/**
 * Self-tests the subgroup-matrix prefill attention on `gpu` for `model`'s attention, once per adapter and
 * shape (cached for the process where `make` is the default), and returns the configuration to run or the
 * reason there is none.
 * @param make the kernel (default {@link SGMAT_ATTENTION}; tests pass doubles).
 * @param kvTile KV positions per tile to use (default: the plan's, from the device's workgroup memory).
 * @throws what GPU work throws on a lost device; never for a kernel's fault.
 */
export async function chooseSgmatAttention(
  gpu: GpuContext,
  model: AttentionShape,
  make: SgmatAttentionKernel = SGMAT_ATTENTION,
  kvTile?: number,
): Promise<SgmatAttentionChoice> {
  const s = gpu.subgroupMatrix;
  if (!s?.available) return { reason: s?.reason ?? 'no subgroup matrices', selfTest: [] };
  const i = gpu.info;
  const cacheable = make === SGMAT_ATTENTION;
  const key = `${i.vendor}|${i.architecture}|${i.device}|${i.description}|${kvTile}|${JSON.stringify(model)}`;
  const hit = cacheable ? cache.get(key) : undefined;
  if (hit) return hit;
  const maxWorkgroupBytes = gpu.limits.maxComputeWorkgroupStorageSize;
  const subgroupSize = gpu.subgroupMaxSize as 32 | 64;
  const selfTest: SgmatAttentionChoice['selfTest'] = [];
  let choice: SgmatAttentionChoice | undefined;
  for (const c of s.usable) {
    const tile: SgmatAttentionTile = { M: c.M, N: c.N, K: c.K, subgroupSize };
    let bk: number;
    try {
      bk = sgmatAttentionPlan({ ...model, tile, kvTile, maxWorkgroupBytes }).kvTile;
    } catch (e) {
      selfTest.push({
        config: configName(c),
        ok: false,
        reason: `not tried: ${(e as Error).message}`,
      });
      continue;
    }
    const opts = (o: AttentionShape): SgmatAttentionOptions => ({
      ...o,
      tile,
      kvTile: bk,
      maxWorkgroupBytes,
    });
    const r = await checkAttentionAgainstFloat(
      gpu,
      { wgsl: (o) => make.wgsl(opts(o)), workgroups: (o, T) => make.workgroups(opts(o), T) },
      model,
    );
    selfTest.push({ config: configName(c), ok: r.ok, ...(r.ok ? {} : { reason: r.reason }) });
    if (r.ok) {
      choice = { tile, kvTile: bk, selfTest };
      break;
    }
  }
  choice ??= {
    reason: `the subgroup-matrix prefill attention failed its self-test against the float kernel on every configuration (${selfTest.map((t) => `${t.config}: ${t.reason}`).join('; ')})`,
    selfTest,
  };
  if (cacheable) cache.set(key, choice);
  return choice;
}

/** Tokens of the timed trial of the sgmat attention against the float one: a realistic prompt batch. */
export const ATTENTION_TRIAL_TOKENS = 512;

/** Timed rounds per kernel in the trial (round-robin); a kernel's time is its median round. */
export const ATTENTION_TRIAL_ROUNDS = 5;

/** The kernels the prefill attention trial times. */
export type AttentionTrialKernel = 'sgmat' | 'float';

/** One kernel's time in the trial: ms per dispatch of {@link ATTENTION_TRIAL_TOKENS} tokens at depth 0. */
export interface AttentionTrial {
  kernel: AttentionTrialKernel;
  ms: number;
}

/**
 * Times the prefill attention kernels: `candidates[kernel]` each, as the model's attention would run them.
 * The default is {@link timeAttentionKernels}; tests inject fixed timings so the choice is deterministic.
 */
export type AttentionTimer = (
  gpu: GpuContext,
  model: AttentionShape,
  candidates: Record<AttentionTrialKernel, AttentionCandidate>,
) => Promise<AttentionTrial[]>;

/**
 * Times `candidates` (the sgmat attention and the adapter's float prefill attention) on `model`'s whole
 * attention (every query and KV head) for `T` tokens at depth 0 with random f32 queries and random
 * caches in the model's types: a warm-up dispatch each, then {@link ATTENTION_TRIAL_ROUNDS} rounds
 * round-robin of `n` dispatches in one compute pass (enough for the faster's warm-up to fill ≥ 15 ms, at
 * least 3), timed by queue completion on the wall clock as kernels/tune.ts `choosePrefillTile` times
 * the matmul tiles; each kernel's median round, in ms per dispatch.
 * @throws Error naming the kernel where one fails to compile or validate (the self-test compiled the
 *   sgmat kernel on a smaller problem first); what GPU work throws on a lost device.
 */
export async function timeAttentionKernels(
  gpu: GpuContext,
  model: AttentionShape,
  candidates: Record<AttentionTrialKernel, AttentionCandidate>,
  T = ATTENTION_TRIAL_TOKENS,
): Promise<AttentionTrial[]> {
  const { device } = gpu;
  const HD = model.headDim;
  const qDim = model.nHead * HD;
  const kvDim = model.nHeadKv * HD;
  const { buf, destroy } = scratchBuffers(device, 'attention-trial');
  try {
    const rng = rng32(HD * 7 + model.nHead);
    const inputs = [
      buf(packStep(T, 0), GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST),
      buf(Float32Array.from({ length: T * qDim }, () => (rng() * 2 - 1) * Math.sqrt(3))),
      buf(randomCache(model.kvType, T, kvDim, rng)),
      buf(randomCache(model.vKvType ?? model.kvType, T, kvDim, rng)),
      buf(T * qDim * 4),
    ];
    const runners: { kernel: AttentionTrialKernel; run: (n: number) => Promise<number>; ms: number[] }[] = [];
    let n = 3;
    for (const kernel of ['sgmat', 'float'] as const) {
      const c = candidates[kernel];
      device.pushErrorScope('validation');
      const module = device.createShaderModule({ label: `attention-trial ${kernel}`, code: c.wgsl(model) });
      const pipeline = await device.createComputePipelineAsync({
        layout: 'auto',
        compute: { module, entryPoint: 'main' },
      });
      const group = device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: inputs.map((buffer, binding) => ({ binding, resource: { buffer } })),
      });
      const err = await device.popErrorScope();
      if (err) throw new Error(`the ${kernel} prefill attention did not validate: ${err.message}`);
      const [gx, gy] = c.workgroups(model, T);
      const run = async (k: number) => {
        const enc = device.createCommandEncoder({ label: 'attention-trial' });
        const pass = enc.beginComputePass();
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, group);
        for (let i = 0; i < k; i++) pass.dispatchWorkgroups(gx, gy);
        pass.end();
        const t0 = performance.now();
        device.queue.submit([enc.finish()]);
        await device.queue.onSubmittedWorkDone();
        return performance.now() - t0;
      };
      const once = await run(1);
      n = Math.max(n, Math.min(100, Math.ceil(15 / Math.max(once, 0.01))));
      runners.push({ kernel, run, ms: [] });
    }
    for (let round = 0; round < ATTENTION_TRIAL_ROUNDS; round++)
      for (const r of runners) r.ms.push((await r.run(n)) / n);
    return runners.map((r) => {
      const s = [...r.ms].sort((a, b) => a - b);
      return { kernel: r.kernel, ms: s[s.length >> 1] };
    });
  } finally {
    destroy();
  }
}
