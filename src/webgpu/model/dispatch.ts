/**
 * The forward plan made runnable: forward.ts says which kernel every dispatch runs and with which
 * buffers; this file compiles those kernels (each distinct WGSL source once, in parallel), binds each
 * one's buffers by binding name into a {@link Dispatch}, and records a step's dispatches into a command
 * encoder (one compute pass, or one per dispatch while a profiler is set), with the copies that read its
 * token or logits back. llama.ts keeps what is stateful:
 * the loaded model, its run state and step uniform, and when each step runs. It is apart from llama.ts
 * because none of it depends on a loaded model's state: it takes a device, a plan and the dispatches.
 */
import { EngineError } from '../../core/errors.ts';
import { bindGroupByName } from '../kernels/bindings.ts';
import type { SamplePassRole } from '../kernels/sample.ts';
import {
  type Dispatch,
  type ForwardConfig,
  type ForwardPlan,
  matmulSource,
  type PlannedKernel,
} from './forward.ts';
import type { ForwardProfiler, MatmulFamilyName } from './options.ts';
import type { RunState } from './state.ts';
import type { ModelSpecs } from './weights.ts';

/** Compiles one compute pipeline. @throws EngineError('unsupported_model') with the compiler's messages. */
export async function compilePipeline(
  device: GPUDevice,
  label: string,
  code: string,
): Promise<GPUComputePipeline> {
  const module = device.createShaderModule({ label, code });
  try {
    return await device.createComputePipelineAsync({
      label,
      layout: 'auto',
      compute: { module, entryPoint: 'main' },
    });
  } catch (e) {
    const info = await module.getCompilationInfo?.().catch(() => undefined);
    const msgs = info?.messages.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('\n') ?? '';
    throw new EngineError('unsupported_model', `pipeline ${label} failed to compile: ${e}\n${msgs}`, {
      cause: e,
    });
  }
}

/** Each device's compiled pipelines by WGSL source (the kernel's whole key: its weight types, shapes, layout). */
const pipelines = new WeakMap<GPUDevice, Map<string, Promise<GPUComputePipeline>>>();

/**
 * The pipeline of `code` on `device`, compiled once per device: a model loaded again (the page, the
 * widget, tests) or another with the same shapes reuses it. A failed compile is not kept.
 * @throws EngineError('unsupported_model') when the pipeline fails to compile.
 */
export function cachedPipeline(device: GPUDevice, label: string, code: string): Promise<GPUComputePipeline> {
  const byCode = pipelines.get(device) ?? new Map<string, Promise<GPUComputePipeline>>();
  pipelines.set(device, byCode);
  const had = byCode.get(code);
  if (had) return had;
  const fresh = compilePipeline(device, label, code);
  fresh.catch(() => byCode.delete(code));
  byCode.set(code, fresh);
  return fresh;
}

/** Every kernel of the forward pass, compiled and bound ({@link compileForward}). */
export interface ForwardDispatches {
  /** Each layer's dispatches in forward order (qkv, [qk norm], attention, wo, ffn, down), for T = 1. */
  decodeLayers: Dispatch[][];
  /** The same with the prefill (matrix × matrix, options.ts `PrefillMatmul`) kernels. */
  prefillLayers: Dispatch[][];
  /** The same for a small batch (mmv at a few tokens per row; forward.ts `ForwardPlan.smallLayers`), or empty. */
  smallLayers: Dispatch[][];
  embed: Dispatch;
  /** The final norm + output matmul of the last token (more than one dispatch only past the binding limit). */
  output: Dispatch[];
  /** The argmax's two passes (partial maxima, then the final one). */
  argmax: Dispatch[];
  /**
   * The GPU sampler's passes with their roles (forward.ts `ForwardPlan.sample`: top-k candidates, top-p
   * candidates, then the draw), compiled at load; a request encodes those it needs
   * (kernels/sample.ts `selectSamplePasses`).
   */
  sampler: SampleDispatch[];
}

/** One of the GPU sampler's passes, compiled and bound, with its role (kernels/sample.ts `SamplePassRole`). */
export type SampleDispatch = Dispatch & { role: SamplePassRole };

/**
 * Compiles the distinct sources of `plan` in parallel (the GPU sampler's too, so the first sampled
 * request does not wait for a compile: 1–2 s on SwiftShader), each once per device ({@link cachedPipeline}),
 * and binds each kernel's buffers by name.
 * @param onCompile called after each distinct source compiles, with the count done and the total.
 * @throws EngineError('unsupported_model') when a pipeline fails to compile.
 */
export async function compileForward(
  dev: GPUDevice,
  plan: ForwardPlan,
  onCompile?: (done: number, total: number) => void,
): Promise<ForwardDispatches> {
  const all: PlannedKernel[] = [
    plan.embed,
    ...plan.output,
    ...plan.argmax,
    ...plan.decodeLayers.flat(),
    ...plan.prefillLayers.flat(),
    ...plan.smallLayers.flat(),
    ...plan.sample,
  ];
  const sources = new Map<string, string>(); // code → label of its first kernel
  for (const k of all) if (!sources.has(k.src.code)) sources.set(k.src.code, k.src.label);
  let done = 0;
  const pipes = new Map<string, GPUComputePipeline>();
  await Promise.all(
    [...sources].map(async ([code, label]) => {
      pipes.set(code, await cachedPipeline(dev, label, code));
      onCompile?.(++done, sources.size);
    }),
  );
  const dispatch = (k: PlannedKernel): Dispatch => {
    const pipeline = pipes.get(k.src.code)!;
    const group = bindGroupByName(dev, pipeline, k.src, k.buffers);
    return { family: k.family, pipeline, group, wgX: k.wgX, y: k.y, tile: k.tile };
  };
  return {
    decodeLayers: plan.decodeLayers.map((l) => l.map(dispatch)),
    prefillLayers: plan.prefillLayers.map((l) => l.map(dispatch)),
    smallLayers: plan.smallLayers.map((l) => l.map(dispatch)),
    embed: dispatch(plan.embed),
    output: plan.output.map(dispatch),
    argmax: plan.argmax.map(dispatch),
    sampler: plan.sample.map((k) => ({ ...dispatch(k), role: k.role })),
  };
}

/**
 * The final norm + output matmul for every position of a batch (teacher-forced scoring), compiled and
 * bound to `buffers` (the output kernel's, with `logits` [batchSize, nVocab]).
 * @param outAll the matmul's specs (weights.ts `ModelSpecs.outAll`).
 * @param mode 'prefill' (the prefill kernels) or 'small' (a small batch's mmv kernel, forward.ts).
 * @throws EngineError('unsupported_model') when a pipeline fails to compile.
 */
export async function compileOutputAll(
  dev: GPUDevice,
  choice: ForwardConfig,
  outAll: ModelSpecs['outAll'],
  buffers: Record<string, GPUBuffer>,
  intDotFamilies: Set<MatmulFamilyName>,
  mode: 'prefill' | 'small' = 'prefill',
): Promise<Dispatch[]> {
  return Promise.all(
    outAll.map(async (spec, i): Promise<Dispatch> => {
      const { src, wgX, tile } = matmulSource(
        choice,
        `output_all#${i}`,
        spec,
        mode,
        'output',
        intDotFamilies,
      );
      const pipeline = await cachedPipeline(dev, src.label, src.code);
      const group = bindGroupByName(dev, pipeline, src, buffers);
      return { family: 'output', pipeline, group, wgX, y: 'tiles', tile };
    }),
  );
}

/**
 * Encodes the forward pass for T tokens (already in `ids`) at positions pos0..pos0+T−1, then the
 * logits of the last token and their argmax into `tokenOut`, or with `sample` the GPU sampler's passes it
 * lists (the request's: kernels/sample.ts `selectSamplePasses`)
 * (with `allLogits`, those kernels instead: every token's logits; with `logits` false, no logits at all;
 * with `pick` false, the logits but neither the argmax nor the sampler; with `small`, a batch of T > 1
 * through the small-batch layers, `k.smallLayers`, where compiled).
 * The Step uniform (and with it the attention chunking, `nSplit` chunks) must have been written.
 * @param prof while set, every dispatch runs in a compute pass of its own with the hook's timestamp writes.
 */
export function encodeDispatches(
  enc: GPUCommandEncoder,
  k: ForwardDispatches,
  T: number,
  nSplit: number,
  prof: ForwardProfiler | undefined,
  opts: {
    allLogits?: Dispatch[];
    sample?: readonly Dispatch[];
    logits: boolean;
    pick?: boolean;
    small?: boolean;
  },
): void {
  const decode = T === 1;
  const small = !decode && opts.small === true && k.smallLayers.length > 0;
  // Profiling: one compute pass per dispatch, with the hook's timestamp writes; else one pass in all.
  const pass = prof
    ? undefined
    : enc.beginComputePass({ label: decode ? 'decode' : small ? 'small_batch' : 'prefill' });
  const run = (d: Dispatch) => {
    if (d.y === 'combine' && nSplit === 1) return;
    const p =
      pass ?? enc.beginComputePass({ label: d.family, timestampWrites: prof?.passWrites(d.family, T) });
    p.setPipeline(d.pipeline);
    p.setBindGroup(0, d.group);
    const y =
      d.y === 'tiles' ? Math.ceil(T / (d.tile ?? 1)) : { tokens: T, one: 1, chunks: nSplit, combine: T }[d.y];
    p.dispatchWorkgroups(d.wgX, y);
    if (!pass) p.end();
  };
  run(k.embed);
  for (const layer of decode ? k.decodeLayers : small ? k.smallLayers : k.prefillLayers)
    for (const d of layer) run(d);
  if (opts.allLogits) {
    for (const d of opts.allLogits) run(d);
  } else if (opts.logits) {
    // Only the last batch of a prefill needs the logits (the output matmul is the biggest one).
    for (const d of k.output) run(d);
    // pick false: the logits only, the token is picked by a later encodePick (a constrained step's mask).
    if (opts.pick !== false) for (const d of opts.sample ?? k.argmax) run(d);
  }
  pass?.end();
}

/**
 * Encodes what turns the logits already there into the token: with `mask` (kernels/mask.ts, bound to the
 * logits and the model's bitmask) that dispatch first, then `pick`, the argmax or the GPU sampler.
 */
export function encodePick(
  enc: GPUCommandEncoder,
  pick: readonly Dispatch[],
  mask?: { pipeline: GPUComputePipeline; group: GPUBindGroup; wgX: number },
): void {
  const pass = enc.beginComputePass({ label: 'pick' });
  if (mask) {
    pass.setPipeline(mask.pipeline);
    pass.setBindGroup(0, mask.group);
    pass.dispatchWorkgroups(mask.wgX);
  }
  for (const d of pick) {
    pass.setPipeline(d.pipeline);
    pass.setBindGroup(0, d.group);
    pass.dispatchWorkgroups(d.wgX);
  }
  pass.end();
}

/** Encodes the GPU sampler's passes `ds` alone, over the logits already there (after a prefill). */
export function encodeSample(enc: GPUCommandEncoder, ds: readonly Dispatch[]): void {
  const pass = enc.beginComputePass({ label: 'sample' });
  for (const d of ds) {
    pass.setPipeline(d.pipeline);
    pass.setBindGroup(0, d.group);
    pass.dispatchWorkgroups(d.wgX);
  }
  pass.end();
}

/**
 * Encodes a step's copies: with `feedBack` the token into `ids[0]` for the next step, with `slot` the
 * token into that readback slot, with `readLogits` the logits [nVocab] into the logits readback.
 */
export function encodeReadback(
  enc: GPUCommandEncoder,
  s: RunState,
  nVocab: number,
  opts: { slot?: number; feedBack?: boolean; readLogits?: boolean },
): void {
  if (opts.feedBack) enc.copyBufferToBuffer(s.tokenOut, 0, s.ids, 0, 4);
  if (opts.slot !== undefined) enc.copyBufferToBuffer(s.tokenOut, 0, s.readbacks[opts.slot], 0, 4);
  if (opts.readLogits) enc.copyBufferToBuffer(s.logits, 0, s.logitsReadback, 0, nVocab * 4);
}
