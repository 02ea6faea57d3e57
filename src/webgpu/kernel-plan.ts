/**
 * The kernel plan of a load: which kernel every step of the forward pass runs, resolved once per adapter
 * and model ({@link resolveKernelPlan}) from the caller's {@link KernelOverrides}, the adapter defaults
 * (software adapters and GPUs differ: {@link prefillMatmulFor}, {@link attentionPolicyFor},
 * {@link adapterDefaults}) and the timed layout trials (kernels/tune.ts), checked against the adapter before
 * anything loads; `LlamaModel.load` takes the {@link KernelPlan}, forward.ts plans every dispatch
 * from it, and `ModelInfo.kernels` reports it ({@link describePlan}). Every kernel default of an adapter is
 * decided here, except the layouts its trials choose among (kernels/tune.ts `mmvCandidates`) and the
 * prefill batch size, which the engine sets before the plan (model/prefill.ts `defaultBatchSize`).
 */
import { EngineError } from '../core/errors.ts';
import type { KvType } from '../core/types.ts';
import type { GgufFile } from '../gguf/types.ts';
import type { LlamaConfig } from '../model/config.ts';
import { configName, type GpuContext, type SubgroupMatrixSupport } from './device.ts';
import { ARGMAX_THREADS } from './kernels/argmax.ts';
import {
  type PrefillLayout,
  prefillAttentionWGSL,
  prefillAttentionWorkgroups,
} from './kernels/attention-prefill.ts';
import { sgmatAttentionWorkgroups } from './kernels/attention-sgmat.ts';
import {
  ATTENTION_TRIAL_TOKENS,
  type AttentionShape,
  type AttentionTimer,
  type AttentionTrial,
  type AttentionTrialKernel,
  chooseSgmatAttention,
  SGMAT_ATTENTION,
  type SgmatAttentionChoice,
  type SgmatAttentionKernel,
  timeAttentionKernels,
} from './kernels/attention-sgmat-check.ts';
import { WEIGHT_BLOCK, WEIGHT_TYPES } from './kernels/common.ts';
import { type I8Units, sgmatName } from './kernels/mmm-sgmat.ts';
import { type MmvLayout, mmvLayoutProblem, mmvSupports } from './kernels/mmv.ts';
import { isPlanarType } from './kernels/repack.ts';
import {
  SAMPLE_PASS_THREADS,
  type SamplePassRole,
  type SampleSettings,
  sampleSplit,
  selectSamplePasses,
} from './kernels/sample.ts';
import {
  chooseSubgroupMatrixBigTile,
  chooseSubgroupMatrixIntTile,
  chooseSubgroupMatrixTile,
  type SgmatChoice,
} from './kernels/sgmat-check.ts';
import {
  chooseMmvLayout,
  choosePrefillTile,
  layoutName,
  type MmvChoice,
  type MmvShape,
  type PrefillTileName,
  type TileChoice,
  TRIAL_ROTATE_BYTES,
} from './kernels/tune.ts';
import type { LlamaModel } from './model/llama.ts';
import {
  type AttentionPolicy,
  GPU_ATTENTION,
  GPU_PREFILL,
  MATMUL_FAMILIES,
  type MatmulFamilyName,
  type PrefillMatmul,
  type SgmatPrefillLayout,
} from './model/options.ts';
import {
  cachedSmallBatch,
  SMALL_BATCH_MAX,
  type SmallBatchChoice,
  type SmallBatchTrial,
  smallBatchTrialKey,
} from './model/small-batch.ts';

/**
 * What a load runs, for every matmul family and mode, attention and weight layout: the one description
 * of a kernel choice (`WebGpuEngine` resolves it, `LlamaModel.load` takes it, forward.ts reads it).
 */
export interface KernelPlan {
  /** The decode matmul kernel of matmuls that mmv does not take (K not whole 32-weight chunks), or all when mmv is off. */
  decodeKernel: 'ksplit' | 'rows';
  /** The mmv layout of each decode matmul mmv runs (kernels/mmv.ts); none: mmv off. */
  mmv: Partial<Record<MatmulFamilyName, MmvLayout>>;
  /** Decode runs each segment of a fused matmul (Q, K and V) as a dispatch of its own. */
  splitDecodeSegments: boolean;
  /** The prefill matrix × matrix kernels. */
  prefill: PrefillMatmul;
  /** Decode and prefill attention: layout and chunking. */
  attention: AttentionPolicy;
  /** Q4_0/Q8_0/Q5_0/Q6_K/Q4_K matmul weights repacked into aligned planes at load (kernels/repack.ts). */
  repack: boolean;
  /**
   * The GPU sampler's top-p candidates passes are planned (kernels/sample.ts `sampleTopPWGSL`; default
   * true). Off on software adapters: there a dispatch of many 256-thread workgroups costs more than the one
   * workgroup's passes over the vocabulary (SwiftShader, 32,000 logits: ~190 ms a step with them, ~40
   * without), as the layouts' trials find for the matmuls.
   */
  sampleTopP?: boolean;
  /**
   * Small batches (speculative decoding's verify pass, a short prompt's prefill): batches of 2 …
   * `smallBatch` tokens (≤ {@link SMALL_BATCH_MAX}) run the layers' matmuls through the decode mmv kernels
   * at a few tokens per workgroup row instead of the prefill tile, as llama.cpp runs batches of ≤ 8
   * through its matrix × vector kernels (CUDA `MMVQ_MAX_BATCH_SIZE`, Vulkan `mul_mat_vec_max_cols`).
   * 0 or absent: off (every batch through the prefill kernels); 'trial': both kernel sets are compiled
   * and `LlamaModel.load` chooses by a timed trial of whole forward passes (model/small-batch.ts).
   * Needs mmv decode layouts (none with `mmvLayout: 'off'`: then off).
   */
  smallBatch?: number | 'trial';
  /** How the trials chose (`ModelInfo.kernels` reports it); absent in a plan made by hand. */
  chosen?: KernelsChosen;
}

/**
 * A GPU's plan without trials: 'ksplit' fallback, no mmv, fused Q/K/V, the workgroup-tiled prefill and
 * attention, planes; `over` replaces any part (`LlamaModel.load`'s default, tests).
 */
export function gpuPlan(over: Partial<KernelPlan> = {}): KernelPlan {
  return {
    decodeKernel: 'ksplit',
    mmv: {},
    splitDecodeSegments: false,
    prefill: GPU_PREFILL,
    attention: GPU_ATTENTION,
    repack: true,
    ...over,
  };
}

/**
 * The decode matmul layouts a caller may force (`WebGpuEngineOptions.mmvLayout`): one for every matmul,
 * one per matmul, or 'off' for the older kernels.
 */
export type MmvLayoutOption = MmvLayout | Partial<Record<MatmulFamilyName, MmvLayout>> | 'off';

/**
 * The kernels a caller may force (`WebGpuEngineOptions` extends this); each unset one is the adapter's
 * default or a trial's choice ({@link resolveKernelPlan}).
 */
export interface KernelOverrides {
  /**
   * Decode matmul layout of matmuls mmv does not take: 'ksplit' (32 threads per output row, coalesced; for
   * hardware GPUs) or 'rows' (one thread per row, no workgroup memory or barriers, and 16-thread attention
   * workgroups; software adapters, where each barrier costs ~20 µs per workgroup). Default: 'rows' on a
   * software (fallback) adapter, 'ksplit' on a GPU.
   */
  decodeKernel?: 'ksplit' | 'rows';
  /**
   * The decode matrix × vector kernels (kernels/mmv.ts): a layout to use for every decode matmul, a layout
   * per matmul (model/options.ts `MatmulFamilyName`; the others are chosen by trial), `'off'` for the older
   * kernels (`decodeKernel`) everywhere, or unset to choose among kernels/tune.ts `mmvCandidates` by a short
   * timed trial per decode matmul shape at the first load on this adapter.
   */
  mmvLayout?: MmvLayoutOption;
  /**
   * How the trial chooses mmv layouts: `per-matmul` (each decode matmul timed on its own shape; default on
   * GPUs) or `one` (the feed-forward gate+up shape, its winner used for every matmul; default on software
   * adapters, where timing a kernel alone mispredicts it in the model, and one trial keeps the load shorter).
   */
  mmvTrials?: 'per-matmul' | 'one';
  /** Repack Q4_0/Q8_0/Q5_0/Q6_K/Q4_K matmul weights into aligned planes at load (default true). */
  repack?: boolean;
  /**
   * Decode: one dispatch per segment of the fused Q/K/V matmul; default on software (fallback) adapters
   * only (they run every branch of a kernel's segment switch under a lane mask), fused on GPUs.
   */
  splitDecodeSegments?: boolean;
  /**
   * Prefill matrix × matrix kernels (tests, benchmarks); default {@link prefillMatmulFor} the adapter, and
   * on GPUs the float or integer-dot tile by a timed trial at load (kernels/tune.ts `choosePrefillTile`).
   * Given here, no trial runs. An mmv choice given here runs the prefill norm pass only with
   * `normPass: true` (the adapter default has it on): to compare, spread `prefillMatmulFor(gpu)` and set
   * `normPass` (scripts/bench-norm-pass.ts). Checked by {@link checkPrefillOption}.
   */
  prefill?: PrefillMatmul;
  /**
   * Decode attention layout and chunking, prefill attention; default {@link attentionPolicyFor} the adapter,
   * with the prefill attention on subgroup matrices chosen by a timed trial where the adapter has them
   * ({@link resolvePrefillAttention}). A `prefill` given here (`{ kind: 'tiled' }`: the float one) skips the trial.
   * `small`: small batches' attention, 'flash' (GPUs' default) or 'prefill' (software adapters'). The
   * decode fields are checked by {@link checkDecodeAttentionOption} and {@link checkDecodeAttentionModel}.
   */
  attention?: Partial<AttentionPolicy>;
  /**
   * Small batches (2 … {@link SMALL_BATCH_MAX} tokens: speculative decoding's verify pass, a short
   * prompt): `'mmv'` runs their matmuls through the decode mmv kernels, `'tile'` through the prefill
   * kernels as longer batches, `'trial'` decides by a timed trial of whole forward passes of 4 and 8
   * tokens both ways at load (model/small-batch.ts). Default ({@link smallBatchFor}): `'trial'` on GPUs;
   * on software adapters `'mmv'` for models with the heavy prefill tiles (≥ {@link PREFILL_LIGHT_BELOW}
   * matmul weights per token) and `'tile'` for lighter ones; `'tile'` wherever `prefill` is given (a
   * forced prefill kernel runs every batch unless this is set too). Needs mmv decode layouts (with
   * `mmvLayout: 'off'` small batches run the prefill kernels). Checked by {@link checkKernelOverrides}.
   */
  smallBatch?: SmallBatchOption;
}

/** `WebGpuEngineOptions.smallBatch` ({@link KernelOverrides}). */
export type SmallBatchOption = 'mmv' | 'tile' | 'trial';

/** The values {@link SmallBatchOption} takes. */
export const SMALL_BATCH_OPTIONS: readonly SmallBatchOption[] = ['mmv', 'tile', 'trial'];

/**
 * The plan's `smallBatch` for the option `o` on an adapter: 'mmv' → {@link SMALL_BATCH_MAX} tokens, 'tile'
 * → 0 (off), 'trial' → 'trial'. Unset: 0 where the caller forced a `prefill` kernel (it then runs every
 * batch); on GPUs 'trial'; on software adapters {@link SMALL_BATCH_MAX} for a model with the heavy prefill
 * tiles (`matmulWeights` ≥ {@link PREFILL_LIGHT_BELOW}, or unknown), where mmv ran 2–8-token prompts
 * 1.18–1.43× faster and verify passes 1.38–1.42× (SwiftShader, 60M Q4_K_M, quiet machine: BENCHMARKS.md,
 * 2026-12-05 14:25), else 0 (stories260K: the same times either way, and no second kernel set to compile).
 * @param matmulWeights the weights one token meets in the layers' matmuls ({@link layerMatmulWeights}).
 */
export function smallBatchFor(
  o: SmallBatchOption | undefined,
  software: boolean,
  { prefillForced = false, matmulWeights }: { prefillForced?: boolean; matmulWeights?: number } = {},
): number | 'trial' {
  const heavy = matmulWeights === undefined || matmulWeights >= PREFILL_LIGHT_BELOW;
  const v = o ?? (prefillForced ? 'tile' : !software ? 'trial' : heavy ? 'mmv' : 'tile');
  return v === 'mmv' ? SMALL_BATCH_MAX : v === 'tile' ? 0 : 'trial';
}

/**
 * The shape of each decode matmul for a layout trial ({@link chooseMmvLayout}), from layer 0's tensors
 * (layers of a Q4_K_M file may differ in type, and so may Q, K and V: layer 0's and Q's stand for all):
 * Q/K/V [nEmbd → nHead·headDim + 2·nHeadKv·headDim] with the norm when the three run as one kernel
 * (`fusedQkv`, GPUs), Q's rows alone when each runs as its own dispatch (splitDecodeSegments), attention output [nHead·headDim → nEmbd], gate+up [nEmbd → nFF] (two rows per unit, with
 * the norm), down [nFF → nEmbd], output [nEmbd → nVocab] with the norm (token_embd where the output is
 * tied). Only matmuls that mmv runs (K a multiple of 32: {@link mmvSupports}) are listed; K is rounded up
 * to the type's block (the model refuses rows that are not whole blocks, after the trial).
 */
export function decodeMatmulShapes(
  file: GgufFile,
  cfg: LlamaConfig,
  repack: boolean,
  fusedQkv: boolean,
): [MatmulFamilyName, MmvShape][] {
  const qDim = cfg.nHead * cfg.headDim;
  const kvDim = cfg.nHeadKv * cfg.headDim;
  const shape = (tensor: string, K: number, N: number, dots: 1 | 2, norm: boolean): MmvShape => {
    const t = file.tensors.get(tensor);
    const type = WEIGHT_TYPES.find((w) => w === t?.typeName) ?? 'F32';
    const blk = Math.max(32, WEIGHT_BLOCK[type].size);
    return { K: Math.ceil(K / blk) * blk, N, type, planar: repack && isPlanarType(type), dots, norm };
  };
  const out = file.tensors.has('output.weight') ? 'output.weight' : 'token_embd.weight';
  // phi3's fused attn_qkv and [gate | up] ffn_up stand for Q and the gate where those are absent.
  const q = file.tensors.has('blk.0.attn_q.weight') ? 'blk.0.attn_q.weight' : 'blk.0.attn_qkv.weight';
  const gate = file.tensors.has('blk.0.ffn_gate.weight') ? 'blk.0.ffn_gate.weight' : 'blk.0.ffn_up.weight';
  const shapes: Record<MatmulFamilyName, MmvShape> = {
    qkv: shape(q, cfg.nEmbd, fusedQkv ? qDim + 2 * kvDim : qDim, 1, true),
    wo: shape('blk.0.attn_output.weight', qDim, cfg.nEmbd, 1, false),
    ffn: shape(gate, cfg.nEmbd, cfg.nFF, 2, true),
    down: shape('blk.0.ffn_down.weight', cfg.nFF, cfg.nEmbd, 1, false),
    output: shape(out, cfg.nEmbd, cfg.nVocab, 1, true),
  };
  const kOf: Record<MatmulFamilyName, number> = {
    qkv: cfg.nEmbd,
    wo: qDim,
    ffn: cfg.nEmbd,
    down: cfg.nFF,
    output: cfg.nEmbd,
  };
  return MATMUL_FAMILIES.filter((f) => mmvSupports(kOf[f], ['F32'])).map((f) => [f, shapes[f]]);
}

/**
 * Checks `WebGpuEngineOptions.mmvLayout` before anything is loaded.
 * @throws EngineError('invalid_argument') naming the matmul and what is wrong with its layout, or an
 *   unknown matmul name.
 */
export function checkMmvLayoutOption(
  o: KernelOverrides['mmvLayout'],
  trials: KernelOverrides['mmvTrials'],
): void {
  if (trials !== undefined && trials !== 'one' && trials !== 'per-matmul') {
    throw new EngineError(
      'invalid_argument',
      `mmvTrials must be 'one' or 'per-matmul' (got ${JSON.stringify(trials)})`,
    );
  }
  if (o === undefined || o === 'off') return;
  if (o === null || typeof o !== 'object' || Array.isArray(o)) {
    throw new EngineError(
      'invalid_argument',
      `mmvLayout must be a layout object ({ lanes, units, threads, reduce, packed }), one per matmul ({ output: … }) or 'off' (got ${JSON.stringify(o)}; the names ModelInfo.kernels reports, such as 'lanes1-u4-t64-packed', are not accepted)`,
    );
  }
  // A layout object is one with any layout field (a missing one is then named); else keys are matmuls.
  const single = ['lanes', 'units', 'threads', 'reduce', 'packed', 'intDot', 'shareX', 'shuffleLanes'].some(
    (k) => k in o,
  );
  const entries: [string, MmvLayout][] = single ? [['every matmul', o as MmvLayout]] : Object.entries(o);
  for (const [f, l] of entries) {
    if (f !== 'every matmul' && !MATMUL_FAMILIES.includes(f as MatmulFamilyName)) {
      throw new EngineError(
        'invalid_argument',
        `mmvLayout names no decode matmul "${f}" (they are ${MATMUL_FAMILIES.join(', ')})`,
      );
    }
    const problem = l === null || typeof l !== 'object' ? 'not a layout object' : mmvLayoutProblem(l);
    if (problem) {
      throw new EngineError('invalid_argument', `mmvLayout for ${f} ${JSON.stringify(l)}: ${problem}`);
    }
  }
}

/**
 * The size S (2, 4 or 8) every subgroup of this adapter has, or undefined: what mmv's `shareX` and the
 * prefill attention's `shareKv` broadcast over.
 */
function uniformSubgroupSize(gpu: GpuContext): number | undefined {
  const S = gpu.subgroupMinSize;
  return gpu.hasSubgroups && S === gpu.subgroupMaxSize && [2, 4, 8].includes(S) ? S : undefined;
}

/**
 * Why sharing values through subgroups of `S` invocations (option `name`) cannot run on this adapter, or
 * undefined: every subgroup must have exactly S (with another size the broadcasts would read the wrong
 * values: wrong output, not an error).
 */
function subgroupShareProblem(name: string, S: number, gpu: GpuContext): string | undefined {
  if (gpu.hasSubgroups && gpu.subgroupMinSize === S && gpu.subgroupMaxSize === S) return undefined;
  return `${name} ${S} needs subgroups of exactly ${S} invocations (this adapter: ${gpu.hasSubgroups ? `${gpu.subgroupMinSize}–${gpu.subgroupMaxSize}` : 'no subgroups'})`;
}

/**
 * Why `lanes` lanes reduced by subgroup shuffles cannot run on this adapter, or undefined: they need
 * subgroups of at least that many invocations (a shuffle past the subgroup reads another lane group's
 * sums: wrong output, no error). Shared by mmv's layouts and the decode attention's tiled layout.
 */
function shuffleLanesProblem(lanes: number, gpu: GpuContext): string | undefined {
  if (gpu.hasSubgroups && gpu.subgroupMinSize >= lanes) return undefined;
  return `needs subgroups of at least ${lanes} invocations (this adapter: ${gpu.hasSubgroups ? `${gpu.subgroupMinSize}–${gpu.subgroupMaxSize}` : 'no subgroups'})`;
}

/**
 * Why a layout cannot run on this adapter, or undefined: {@link subgroupShareProblem} for `shareX`; lanes
 * reduced by shuffles (reduce 'subgroup': all lanes, 'hybrid': shuffleLanes) need subgroups of at least
 * that many invocations (a shuffle past the subgroup reads another lane group's sums: wrong output).
 */
function layoutAdapterProblem(l: MmvLayout, gpu: GpuContext): string | undefined {
  const shuffled =
    l.lanes > 1 ? (l.reduce === 'subgroup' ? l.lanes : l.reduce === 'hybrid' ? l.shuffleLanes : 0) : 0;
  const problem = shuffled ? shuffleLanesProblem(shuffled, gpu) : undefined;
  if (problem) return `reduce '${l.reduce}' shuffles ${shuffled} lanes, which ${problem}`;
  return l.shareX === undefined ? undefined : subgroupShareProblem('shareX', l.shareX, gpu);
}

/**
 * Checks the mmv layouts of `WebGpuEngineOptions.mmvLayout` (already well-formed) against the adapter.
 * @throws EngineError('invalid_argument') for a layout this adapter cannot run ({@link layoutAdapterProblem}).
 */
export function checkMmvLayoutAdapter(o: KernelOverrides['mmvLayout'], gpu: GpuContext): void {
  if (o === undefined || o === 'off') return;
  const single = ['lanes', 'units', 'threads', 'reduce', 'packed', 'intDot', 'shareX', 'shuffleLanes'].some(
    (k) => k in o,
  );
  const entries: [string, MmvLayout][] = single ? [['every matmul', o as MmvLayout]] : Object.entries(o);
  for (const [f, l] of entries) {
    const problem = layoutAdapterProblem(l, gpu);
    if (problem)
      throw new EngineError('invalid_argument', `mmvLayout for ${f} ${JSON.stringify(l)}: ${problem}`);
  }
}

/**
 * Checks the form of `WebGpuEngineOptions.attention`'s decode fields: `layout` (`{ kind: 'tiled', lanes?:
 * 1 | 2 | 4 | 8 }` or `{ kind: 'strided', threads?: a power of two ≤ 64 }`, `narrow?`, `narrowV?`: booleans),
 * `targetWorkgroups` (an integer 1 … 65,536), `minChunk` and `fixedChunk` (integers 1 … 1,048,576); anything
 * else would fail to compile, divide by a zero chunk or run NaN workgroups. A field the policy does not
 * have (a misspelling) is refused too, rather than leaving the default to run unnoticed.
 * @throws EngineError('invalid_argument') naming the field and what it must be.
 */
export function checkDecodeAttentionOption(o: KernelOverrides['attention']): void {
  if (o === undefined) return;
  const bad = (what: string, got: unknown) =>
    new EngineError('invalid_argument', `attention.${what} (got ${JSON.stringify(got)})`);
  const int = (v: unknown, lo: number, hi: number) =>
    Number.isInteger(v) && (v as number) >= lo && (v as number) <= hi;
  const known = ['layout', 'targetWorkgroups', 'minChunk', 'fixedChunk', 'prefill', 'small'];
  const unknown = Object.keys(o).filter((k) => !known.includes(k));
  if (unknown.length > 0)
    throw new EngineError(
      'invalid_argument',
      `attention has no field ${unknown.map((k) => JSON.stringify(k)).join(', ')} (it takes ${known.join(', ')})`,
    );
  for (const [k, hi] of [
    ['targetWorkgroups', 65536],
    ['minChunk', 1048576],
    ['fixedChunk', 1048576],
  ] as const)
    if (o[k] !== undefined && !int(o[k], 1, hi)) throw bad(`${k} must be an integer from 1 to ${hi}`, o[k]);
  const l = o.layout as unknown as Record<string, unknown> | undefined;
  if (l === undefined) return;
  if (typeof l !== 'object' || l === null || (l.kind !== 'tiled' && l.kind !== 'strided'))
    throw bad(
      "layout must be { kind: 'tiled', lanes?: 1 | 2 | 4 | 8 } or { kind: 'strided', threads?: N }",
      l,
    );
  if (l.kind === 'tiled' && l.lanes !== undefined && ![1, 2, 4, 8].includes(l.lanes as number))
    throw bad('layout.lanes must be 1, 2, 4 or 8', l.lanes);
  if (
    l.kind === 'strided' &&
    l.threads !== undefined &&
    ![1, 2, 4, 8, 16, 32, 64].includes(l.threads as number)
  )
    throw bad('layout.threads must be a power of two from 1 to 64', l.threads);
  for (const k of ['narrow', 'narrowV'] as const)
    if (l[k] !== undefined && typeof l[k] !== 'boolean') throw bad(`layout.${k} must be a boolean`, l[k]);
  const layoutKeys = ['kind', l.kind === 'tiled' ? 'lanes' : 'threads', 'narrow', 'narrowV'];
  const extra = Object.keys(l).filter((k) => !layoutKeys.includes(k));
  if (extra.length > 0)
    throw new EngineError(
      'invalid_argument',
      `attention.layout { kind: '${l.kind}' } has no field ${extra.map((k) => JSON.stringify(k)).join(', ')} (it takes ${layoutKeys.join(', ')})`,
    );
}

/**
 * The decode attention layout against the adapter and the model: lanes above 1 reduce through subgroup
 * shuffles, so they need subgroups of at least that many invocations (fewer would mix positions: wrong
 * scores, not an error), and must divide headDim/4.
 * @throws EngineError('invalid_argument') naming the lanes, the adapter's subgroups or the head size.
 */
export function checkDecodeAttentionModel(
  o: KernelOverrides['attention'],
  gpu: GpuContext,
  headDim: number,
): void {
  const l = o?.layout;
  if (l?.kind !== 'tiled' || (l.lanes ?? 1) === 1) return;
  const lanes = l.lanes ?? 1;
  const problem = shuffleLanesProblem(lanes, gpu);
  if (problem)
    throw new EngineError('invalid_argument', `attention.layout: ${lanes} lanes per position ${problem}`);
  if ((headDim / 4) % lanes !== 0)
    throw new EngineError(
      'invalid_argument',
      `attention.layout: ${lanes} lanes per position must divide the head size ÷ 4 (${headDim} ÷ 4 = ${headDim / 4})`,
    );
}

/**
 * Checks `WebGpuEngineOptions.attention`'s prefill layout against the adapter: `shareKv: S` needs
 * subgroups of exactly S invocations, as mmv's `shareX` (another size would broadcast the wrong K and V),
 * and `threads` a multiple of S.
 * @throws EngineError('invalid_argument') for a layout this adapter cannot run.
 */
export function checkAttentionAdapter(o: KernelOverrides['attention'], gpu: GpuContext): void {
  const p = o?.prefill;
  if (p !== undefined && p !== 'per-token' && p.kind === 'sgmat') {
    if (p.kvTile !== undefined && !(Number.isInteger(p.kvTile) && p.kvTile >= 8 && p.kvTile <= 256))
      throw new EngineError(
        'invalid_argument',
        `attention.prefill { kind: 'sgmat' } kvTile must be an integer from 8 to 256, a multiple of the configuration's N and K (got ${JSON.stringify(p.kvTile)})`,
      );
    return;
  }
  if (p === undefined || p === 'per-token' || p.shareKv === undefined) return;
  if ((p.threads ?? 16) % p.shareKv !== 0)
    throw new EngineError(
      'invalid_argument',
      `attention.prefill ${JSON.stringify(p)}: threads must be a multiple of shareKv`,
    );
  const problem = subgroupShareProblem('shareKv', p.shareKv, gpu);
  if (problem)
    throw new EngineError('invalid_argument', `attention.prefill ${JSON.stringify(p)}: ${problem}`);
}

/**
 * Checks `WebGpuEngineOptions.prefill` against the adapter.
 * @throws EngineError('invalid_argument') for an unknown kind, the integer-dot tile where WGSL has no
 *   packed_4x8_integer_dot_product, an mmv layout that is malformed or wrong for this adapter, or an mmv
 *   `normPass` that is not a boolean.
 */
export function checkPrefillOption(p: PrefillMatmul | undefined, gpu: GpuContext): void {
  if (p === undefined) return;
  if (p === null || typeof p !== 'object' || (p.kind !== 'tile' && p.kind !== 'mmv'))
    throw new EngineError(
      'invalid_argument',
      `prefill must be { kind: 'tile' } or { kind: 'mmv', … } (got ${JSON.stringify(p)})`,
    );
  if (p.kind === 'tile' && p.intDot && !gpu.wgslFeatures.has('packed_4x8_integer_dot_product'))
    throw new EngineError(
      'invalid_argument',
      "prefill { kind: 'tile', intDot: true } needs the WGSL language feature packed_4x8_integer_dot_product, which this adapter's browser does not offer",
    );
  if (p.kind === 'mmv') {
    const l = p.layout;
    const problem =
      l === null || typeof l !== 'object'
        ? 'not a layout object'
        : (mmvLayoutProblem(l) ?? layoutAdapterProblem(l, gpu));
    if (problem)
      throw new EngineError('invalid_argument', `prefill mmv layout ${JSON.stringify(l)}: ${problem}`);
    if (p.normPass !== undefined && typeof p.normPass !== 'boolean')
      throw new EngineError(
        'invalid_argument',
        `prefill mmv normPass must be true, false or absent (got ${JSON.stringify(p.normPass)})`,
      );
  }
}

/**
 * The prefill matmuls for an adapter (model/options.ts {@link PrefillMatmul}): on a GPU the workgroup-tiled
 * kernel (kernels/mmm.ts); on a software (fallback) adapter mmv's register tiles of 4 rows × 8 tokens per
 * thread in 16-thread workgroups, one dispatch per segment. Where every subgroup has the same size S of 2,
 * 4 or 8 (SwiftShader: 4) the activations are shared through the subgroup (MmvLayout.shareX) and a thread
 * takes 8 rows × 16 tokens in 8-thread workgroups (each row more shares the thread's activation loads and
 * broadcasts). Each was the fastest measured on SwiftShader (BENCHMARKS.md, "Why the kernel defaults…",
 * prefillMatmulFor). A batch is at least one tile (model/prefill.ts), so 16 tokens also set how soon a
 * Stop lands (BENCHMARKS.md, Stop to idle).
 *
 * Those tiles unroll into large shaders (Q/K/V of 8 rows × 16 tokens: ~150 KB of WGSL per segment) that
 * a software adapter compiles slowly, and only a model with many weights earns the compile back. So a
 * model with fewer than {@link PREFILL_LIGHT_BELOW} matmul weights per token gets 2 rows × 4 tokens in
 * 32-thread workgroups, without shareX: the heavy tiles' longer compile pays back only over long prompts
 * on larger models (BENCHMARKS.md, "Why the kernel defaults…", prefillMatmulFor).
 * @param matmulWeights the weights one token's prefill multiplies by in the layers' matmuls
 *   ({@link layerMatmulWeights}); undefined takes the heavy tiles.
 */
export function prefillMatmulFor(gpu: GpuContext, matmulWeights?: number): PrefillMatmul {
  if (!gpu.info.isFallback) return GPU_PREFILL;
  const packed = gpu.wgslFeatures.has('packed_4x8_integer_dot_product');
  if (matmulWeights !== undefined && matmulWeights < PREFILL_LIGHT_BELOW)
    return {
      kind: 'mmv',
      layout: { lanes: 1, units: 2, threads: 32, reduce: 'shared', packed },
      tokens: 4,
      splitSegments: true,
    };
  const shareX = uniformSubgroupSize(gpu);
  return {
    kind: 'mmv',
    layout: shareX
      ? { lanes: 1, units: 8, threads: 8, reduce: 'shared', packed, shareX }
      : { lanes: 1, units: 4, threads: 16, reduce: 'shared', packed },
    tokens: shareX ? 16 : 8,
    splitSegments: true,
    normPass: true,
  };
}

/**
 * Below this many matmul weights per token ({@link layerMatmulWeights}) a software adapter prefills with
 * small tiles that compile quickly ({@link prefillMatmulFor}).
 */
export const PREFILL_LIGHT_BELOW = 16_000_000;

/**
 * The weights one token meets in the layers' matmuls: nLayers × (nEmbd·(qDim + 2·kvDim) + qDim·nEmbd +
 * 3·nEmbd·nFF), qDim = nHead·headDim, kvDim = nHeadKv·headDim (Q, K, V, attn_output, gate, up, down of a
 * llama block; the output matmul runs once per prompt, not per token, and is left out).
 */
export function layerMatmulWeights(cfg: LlamaConfig): number {
  const qDim = cfg.nHead * cfg.headDim;
  const kvDim = cfg.nHeadKv * cfg.headDim;
  return cfg.nLayers * (cfg.nEmbd * (qDim + 2 * kvDim) + qDim * cfg.nEmbd + 3 * cfg.nEmbd * cfg.nFF);
}

/**
 * The decode attention for an adapter (kernels/attention-decode.ts): on a software (fallback) adapter, where
 * a barrier costs ~20 µs per workgroup and each thread of a workgroup costs too, the strided layout with 8
 * threads in chunks of ≥ 1024 positions aiming at 2 workgroups per core (more, smaller chunks timed
 * slower); on a GPU the tiled layout with 4 lanes per position where subgroups of ≥ 4 exist
 * (1 otherwise, or where 4 does not divide headDim/4), chunks of ≥ 128 positions aiming at 256 workgroups.
 * Prefill attention: the `rows` layout on a software adapter (no barriers, K/V read from the cache; faster
 * there than the per-(head, token) kernel and than `tiled`), with K and V shared through subgroups
 * (`shareKv`), 2 positions per step and one subgroup per workgroup where every subgroup has the same size
 * S of 2, 4 or 8. One subgroup: a shared workgroup runs its KV loop to its last token for every thread,
 * and the engine's prefill batches on a software adapter are one 16-token tile, so more threads add more
 * work than they share; `tiled` on a GPU (KV tiles in workgroup memory shared by a tile of query rows).
 * Small batches' attention (`small`): flash-decoding on a GPU (a verify pass or short prompt deep in the
 * cache then spreads over chunks as a decode step does); the prefill kernel on a software adapter, where
 * the strided flash layout unrolls 8 query tokens' rows into registers (a head of 256 took ~70 s to
 * compile on SwiftShader) and a few tokens' attention is a small share of the pass.
 * Measurements: BENCHMARKS.md, "Why the kernel defaults…", attentionPolicyFor.
 */
export function attentionPolicyFor(gpu: GpuContext, headDim: number): AttentionPolicy {
  if (gpu.info.isFallback) {
    const cores =
      (globalThis.navigator as { hardwareConcurrency?: number } | undefined)?.hardwareConcurrency ?? 2;
    const shareKv = uniformSubgroupSize(gpu);
    return {
      layout: { kind: 'strided', threads: 8 },
      targetWorkgroups: 2 * cores,
      minChunk: 1024,
      prefill: { kind: 'rows', ...(shareKv ? { shareKv, threads: shareKv, block: 2 } : {}) },
      small: 'prefill',
    };
  }
  const lanes = gpu.hasSubgroups && gpu.subgroupMinSize >= 4 && (headDim / 4) % 4 === 0 ? 4 : 1;
  return { ...GPU_ATTENTION, layout: { kind: 'tiled', lanes }, prefill: { kind: 'tiled' }, small: 'flash' };
}

/**
 * `ModelInfo.kernels` of our engine ({@link describePlan}): which decode matmul kernels run, `mmv` with its
 * layout (kernels/mmv.ts) and how it was chosen (`measured` at this load, `cached` from an earlier
 * measurement on this adapter, `option`, `only`), with the candidates' times; `fallback` is the kernel of
 * matmuls mmv does not take (K not a multiple of 32) or of all of them when mmv is off.
 */
export type KernelsInfo = {
  decode: 'mmv' | 'ksplit' | 'rows';
  mmvLayout?: string;
  chosenBy?: 'measured' | 'cached' | 'option' | 'only';
  trials?: { layout: string; ms: number }[];
  /**
   * The layout of each decode matmul that mmv runs (K a multiple of 32; `mmvLayout`, `chosenBy` and
   * `trials` above are the feed-forward gate+up's): Q/K/V, attention output, gate+up, down and output.
   * With `mmvTrials: 'per-matmul'` (GPUs' default) each is chosen by its own timed trial on its shape
   * (kernels/tune.ts), with the candidates' ms per dispatch; with `'one'` (software adapters' default)
   * the others take the gate+up's winner, `chosenBy: 'ffn-trial'`, no trials of their own.
   */
  mmvLayouts?: Partial<
    Record<
      'qkv' | 'wo' | 'ffn' | 'down' | 'output',
      {
        layout: string;
        chosenBy: 'measured' | 'cached' | 'option' | 'only' | 'ffn-trial';
        trials?: { layout: string; ms: number }[];
        /**
         * GPUs: copies of the matrix the trial's dispatches rotated over, so that each read it from memory
         * as a decode token does, not from the cache (kernels/tune.ts `trialCopies`); absent where one.
         */
        trialCopies?: number;
      }
    >
  >;
  fallback: 'ksplit' | 'rows';
  /** Decode matmuls per token on mmv and on the fallback. */
  matmuls: { mmv: number; fallback: number };
  /** Weight tensors repacked into aligned planes at load (Q4_0/Q8_0/Q5_0/Q6_K/Q4_K matmul weights). */
  planarTensors?: number;
  /** Weight tensors split by rows across several buffer bindings (each larger than one binding). */
  splitTensors?: number;
  /** Dispatches per decode step (more than usual where a kernel was split to fit the binding count). */
  dispatchesPerToken?: number;
  /** Decode runs each segment of the fused Q/K/V matmul as its own dispatch (software adapters). */
  splitSegments?: boolean;
  /**
   * Small batches (model/small-batch.ts): batches of 2 … `maxTokens` tokens run the layers' matmuls
   * through the decode mmv kernels (0: none), chosen by the option, the adapter's default, the load's
   * timed trial (`trials`: median ms of a whole forward pass of `tokens` tokens each way), or
   * `unavailable` (mmv runs no decode matmul); `attention`, where small batches run (`maxTokens` ≥ 2):
   * their attention, flash-decoding over chunks of the cache (`flash`) or the prefill kernel
   * (options.ts `AttentionPolicy.small`).
   */
  smallBatch?: SmallBatchChoice & { attention?: 'flash' | 'prefill-kernel' };
  /**
   * Decode attention (kernels/attention-decode.ts): `flash` (flash-decoding; its layout, lanes per
   * position, and the chunking policy: chunks of ≥ minChunk positions aiming at targetWorkgroups
   * workgroups), or the prefill kernel where the head shape rules flash out. `prefill`: the prefill
   * attention, `tiled` (GPUs: KV tiles of `kvTile` positions in workgroup memory) or `rows` (software
   * adapters: rows in registers, K/V read from the cache, `kvTile` positions per step), each workgroup
   * serving `tokensPerWorkgroup` query tokens × `headsPerWorkgroup` heads of one KV head; or `per-token`
   * (one workgroup per head and token; head sizes the tiled kernels do not take).
   */
  attention?: {
    decode: 'flash' | 'prefill-kernel';
    layout?: 'tiled' | 'strided';
    lanes?: number;
    minChunk?: number;
    targetWorkgroups?: number;
    prefill?: {
      kernel: 'tiled' | 'rows' | 'sgmat' | 'per-token';
      tokensPerWorkgroup?: number;
      headsPerWorkgroup?: number;
      kvTile?: number;
      threads?: number;
      /** `rows`: K and V shared through subgroups of this many invocations. */
      shareKv?: number;
      /**
       * The prefill attention on subgroup matrices (kernels/attention-sgmat.ts): `chosen` (then `kernel` is
       * `sgmat` and `tile` its M×N×K), `reason` why not (the adapter has none, forced to another kernel, no
       * configuration takes the head size, a failed self-test), and the load-time self-test's verdict per
       * configuration against the float kernel (kernels/attention-sgmat-check.ts).
       */
      subgroupMatrix?: {
        chosen: boolean;
        tile?: string;
        reason?: string;
        selfTest?: { config: string; ok: boolean; reason?: string }[];
      };
      /**
       * The load's timed trial of the sgmat attention against the float one (512 tokens at depth 0, every
       * head; ms per dispatch, the median of 5 rounds), where it ran: not forced either way, the adapter
       * has subgroup matrices and the kernel passed its self-test. The faster one runs.
       */
      trial?: { kernel: 'sgmat' | 'float'; ms: number }[];
    };
  };
  /** The greedy pick: the argmax's two passes (kernels/argmax.ts), as loaded ({@link pickInfo}). */
  argmax?: ArgmaxInfo;
  /** The GPU sampler's passes as loaded, and which of them each kind of request runs ({@link pickInfo}). */
  sampler?: SamplerInfo;
  /**
   * Prefill matmuls: `tile` (kernels/mmm.ts, workgroup-memory tiles; GPUs) or `mmv` (kernels/mmv.ts
   * register tiles at `tokensPerTile` tokens, one dispatch per segment when `splitSegments`; software
   * adapters); matmuls whose K is not a multiple of 32 use matmul.ts's kernel in the `mmv` choice.
   * `tile` only: `intDot`, the matmul families on the integer-dot tile (those whose weights are all
   * Q4_0, Q5_0, Q8_0, Q4_K or Q6_K, where the integer tile was chosen; empty when none); `tileChosenBy`,
   * how the float or integer tile was chosen ('measured' by a timed trial on the gate+up shape at this
   * load, 'cached' from an earlier one on this adapter, 'option', 'unavailable': no
   * packed_4x8_integer_dot_product or a type the integer tile does not take), and `tileTrials`, ms per
   * trial dispatch of each.
   */
  prefill?: {
    matmul: 'tile' | 'mmv';
    mmvLayout?: string;
    tokensPerTile: number;
    splitSegments?: boolean;
    /** `mmv`: the batch's input RMSNorm is a dispatch of its own per layer and matmul input (model/options.ts `PrefillMatmul` normPass). */
    normPass?: boolean;
    intDot?: string[];
    tileChosenBy?: 'measured' | 'cached' | 'option' | 'unavailable';
    tileTrials?: { tile: PrefillTileName; ms: number }[];
    /**
     * The subgroup-matrix tile (kernels/mmm-sgmat.ts, the GPU's matrix units): `available` on the adapter
     * (device.ts `subgroupMatrixSupport`) and its configurations, the tile `chosen` (its shape M×N×K) for
     * every matmul or not, `reason` why not (unavailable, a failed self-test, a slower trial), and the
     * load-time self-test's verdict per configuration tried (kernels/sgmat-check.ts).
     */
    subgroupMatrix?: {
      available: boolean;
      configs: string[];
      chosen: boolean;
      tile?: string;
      reason?: string;
      selfTest?: { config: string; ok: boolean; reason?: string }[];
      /**
       * The integer variant (i8 → i32, kernels/mmm-sgmat.ts `mmmSgmatIntWGSL`): `chosen` (then `tile` above
       * is `i8 M×N×K`), `reason` why not, `i8Units` the unit of i8 load offsets and strides whose variant
       * passed the self-test ('words' or 'bytes': the driver's convention, settled at load), its self-test
       * against the integer-dot tile per configuration and unit tried.
       */
      int?: {
        chosen: boolean;
        reason?: string;
        i8Units?: I8Units;
        selfTest?: { config: string; ok: boolean; reason?: string; i8Units?: I8Units }[];
      };
      /**
       * The large f16 tile (64 tokens × 128 rows, kernels/mmm-sgmat.ts `sgmatTileDims`): `chosen` (then
       * `tile` above ends in ` 64x128`, or ` 64x128 1-buffer` where the device's workgroup memory takes
       * only the single-buffered one), `reason` why not (e.g. workgroup memory), its self-test.
       */
      big?: {
        chosen: boolean;
        reason?: string;
        selfTest?: { config: string; ok: boolean; reason?: string }[];
      };
    };
  };
};

/**
 * `ModelInfo.kernels.argmax`: the greedy pick over one row of `nVocab` logits (kernels/argmax.ts), a
 * reduction in two dispatches of `threads` threads per workgroup: `stripes` workgroups each reduce a stripe
 * of `stripe` logits (the last one shorter) to a partial (max, index), then `finalWorkgroups` (one per
 * row) reduce the stripes' partials, `partialsPerThread` per thread, then a tree. `stripe` =
 * max(1,024, ⌈nVocab / 256 / 256⌉ · 256), `stripes` = ⌈nVocab / stripe⌉ ≤ 256 (`argmaxSplit`): 32 for
 * 32,000 logits, 126 for 128,256, 149 for 151,936.
 */
export interface ArgmaxInfo {
  nVocab: number;
  threads: number;
  /** Logits per workgroup of the partials pass. */
  stripe: number;
  /** Workgroups of the partials pass per row. */
  stripes: number;
  finalWorkgroups: number;
  partialsPerThread: number;
}

/**
 * One dispatch of the token pick, by what it does: the argmax's partials and final passes, or one of the
 * GPU sampler's (kernels/sample.ts `SamplePassRole`: `candidates`, `top_p_max`, `top_p_mass`,
 * `top_p_compact`, `draw`).
 */
export type PickPass = 'argmax_partials' | 'argmax_final' | SamplePassRole;

/**
 * The kinds of request whose pick {@link SamplerInfo} `requests` lists, and the parameters that stand for
 * each (the other parameters at their defaults: min-p 0, repetition penalty 1):
 * - `greedy`: temperature 0, no repetition penalty: the argmax (generation.ts `isGreedy`);
 * - `penalty`: temperature 0 with a repetition penalty (1.1): the sampler's argmax of the penalised logits;
 * - `topK`: temperature 0.8, top-k 40 (llama.cpp's default k), top-p 1;
 * - `topP`: temperature 0.8, top-p 0.95, top-k off (issue 40's sampled decode);
 * - `temperature`: temperature 0.8 alone (also what a top-k over 256 runs).
 */
export const PICK_REQUESTS: Readonly<Record<'penalty' | 'topK' | 'topP' | 'temperature', SampleSettings>> = {
  penalty: { temperature: 0, topK: 0, topP: 1, minP: 0, repetitionPenalty: 1.1, repetitionLastN: 64 },
  topK: { temperature: 0.8, topK: 40, topP: 1, minP: 0, repetitionPenalty: 1, repetitionLastN: 64 },
  topP: { temperature: 0.8, topK: 0, topP: 0.95, minP: 0, repetitionPenalty: 1, repetitionLastN: 64 },
  temperature: { temperature: 0.8, topK: 0, topP: 1, minP: 0, repetitionPenalty: 1, repetitionLastN: 64 },
};

/** A kind of request in {@link SamplerInfo} `requests` (see {@link PICK_REQUESTS}). */
export type PickRequestKind = 'greedy' | keyof typeof PICK_REQUESTS;

/**
 * `ModelInfo.kernels.sampler`: the GPU sampler (kernels/sample.ts) as loaded. `on`: where sampled
 * requests pick (`WebGpuEngineOptions.sampling`; 'cpu' reads the logits back every step). `passes`: the
 * planned passes in dispatch order, each with its workgroups and threads per workgroup (the many-workgroup
 * passes over `stripes` stripes of `stripe` logits, the argmax's split; the draw, one workgroup).
 * `topK`: whether the top-k candidates pass is planned, the largest k it compacts (`cap`, 0 when not) and
 * why not; `topP`: the same for the three top-p candidates passes (not on software adapters,
 * `KernelPlan.sampleTopP`). `requests`: the pick's dispatches a request of each kind runs per token, in
 * order (`samplePassesNeeded` of its parameters among the planned passes; empty for the sampled kinds
 * when `on` is 'cpu').
 */
export interface SamplerInfo {
  on: 'gpu' | 'cpu';
  stripe: number;
  stripes: number;
  passes: { role: SamplePassRole; workgroups: number; threads: number }[];
  topK: { planned: boolean; cap: number; reason?: string };
  topP: { planned: boolean; reason?: string };
  requests: Record<PickRequestKind, PickPass[]>;
}

/**
 * `ModelInfo.kernels.argmax` and `.sampler` from the pick's dispatches as the model loaded them
 * (`LlamaModel.pickDispatches`: workgroups along x, the sampler's roles) and the split they were built
 * from (kernels/argmax.ts `argmaxSplit`, kernels/sample.ts `sampleSplit`).
 * @param o `sampleTopP`: the plan's (false: a software adapter's); `sampling`: the engine's option.
 * @throws RangeError when nVocab < 1; Error when `dispatches.argmax` is not the two passes.
 */
export function pickInfo(
  nVocab: number,
  dispatches: {
    argmax: readonly { wgX: number }[];
    sampler: readonly { role: SamplePassRole; wgX: number }[];
  },
  o: { sampleTopP?: boolean; sampling?: 'gpu' | 'cpu' } = {},
): { argmax: ArgmaxInfo; sampler: SamplerInfo } {
  const split = sampleSplit(nVocab);
  const [partials, final] = dispatches.argmax;
  if (dispatches.argmax.length !== 2)
    throw new Error(`the argmax has 2 passes, got ${dispatches.argmax.length} dispatches`);
  const argmax: ArgmaxInfo = {
    nVocab,
    threads: ARGMAX_THREADS,
    stripe: split.chunk,
    stripes: partials.wgX,
    finalWorkgroups: final.wgX,
    partialsPerThread: Math.ceil(partials.wgX / ARGMAX_THREADS),
  };
  const planned = dispatches.sampler;
  const has = (r: SamplePassRole) => planned.some((d) => d.role === r);
  const topPPlanned = has('top_p_max');
  const on = o.sampling ?? 'gpu';
  const runs = (p: SampleSettings): PickPass[] =>
    on === 'cpu' ? [] : selectSamplePasses(planned, p, nVocab).map((d) => d.role);
  return {
    argmax,
    sampler: {
      on,
      stripe: split.chunk,
      stripes: split.nParts,
      passes: planned.map((d) => ({ role: d.role, workgroups: d.wgX, threads: SAMPLE_PASS_THREADS[d.role] })),
      topK: {
        planned: has('candidates'),
        cap: has('candidates') ? split.cap : 0,
        ...(has('candidates') ? {} : { reason: split.capReason ?? 'not planned' }),
      },
      topP: {
        planned: topPPlanned,
        ...(topPPlanned
          ? {}
          : {
              reason:
                split.capReason ??
                (o.sampleTopP === false
                  ? "a software adapter's plan: there a dispatch of many workgroups costs more than the draw's passes over the vocabulary"
                  : 'not planned'),
            }),
      },
      requests: {
        greedy: ['argmax_partials', 'argmax_final'],
        penalty: runs(PICK_REQUESTS.penalty),
        topK: runs(PICK_REQUESTS.topK),
        topP: runs(PICK_REQUESTS.topP),
        temperature: runs(PICK_REQUESTS.temperature),
      },
    },
  };
}

/** `ModelInfo.kernels.prefill.subgroupMatrix`: available, chosen, and why not. */
export function subgroupMatrixInfo(
  support: SubgroupMatrixSupport | undefined,
  sgmat: SgmatChoice | undefined,
  tile: TileChoice | undefined,
  sgmatInt?: SgmatChoice,
  sgmatBig?: SgmatChoice,
): NonNullable<KernelsInfo['prefill']>['subgroupMatrix'] {
  const chosen = tile?.subgroupMatrix;
  const whyNot = (sg: SgmatChoice | undefined, other: boolean) =>
    !support?.available
      ? (support?.reason ?? 'no subgroup matrices')
      : sg === undefined
        ? 'not asked for (the prefill option names another tile)'
        : (sg.reason ??
          (other
            ? 'the other subgroup-matrix tile was chosen'
            : tile?.chosenBy === 'measured'
              ? 'slower than the chosen tile in the timed trial'
              : 'not chosen'));
  const bChosen = Boolean(chosen?.big);
  const fChosen = Boolean(chosen && !chosen.int && !chosen.big);
  const iChosen = Boolean(chosen?.int);
  const reason = fChosen ? undefined : whyNot(sgmat, iChosen || bChosen);
  const intReason = iChosen ? undefined : whyNot(sgmatInt, fChosen || bChosen);
  // The i8 unit of the integer tile that runs, or that passed its self-test.
  const i8Units = iChosen ? chosen?.i8Units : sgmatInt?.tile?.i8Units;
  const bigReason = bChosen ? undefined : whyNot(sgmatBig, fChosen || iChosen);
  return {
    available: Boolean(support?.available),
    configs: (support?.configs ?? []).map(configName),
    chosen: Boolean(chosen),
    ...(chosen ? { tile: sgmatName(chosen) } : {}),
    ...(reason && !iChosen && !bChosen ? { reason } : {}),
    ...(sgmat?.selfTest.length ? { selfTest: sgmat.selfTest } : {}),
    ...(sgmatInt || iChosen
      ? {
          int: {
            chosen: iChosen,
            ...(intReason ? { reason: intReason } : {}),
            ...(i8Units ? { i8Units } : {}),
            ...(sgmatInt?.selfTest.length ? { selfTest: sgmatInt.selfTest } : {}),
          },
        }
      : {}),
    ...(sgmatBig || bChosen
      ? {
          big: {
            chosen: bChosen,
            ...(bigReason ? { reason: bigReason } : {}),
            ...(sgmatBig?.selfTest.length ? { selfTest: sgmatBig.selfTest } : {}),
          },
        }
      : {}),
  };
}

/** `ModelInfo.kernels.attention.prefill` from the model's prefill attention. */
function prefillAttentionInfo(
  a: LlamaModel['prefillAttention'],
  sg: NonNullable<NonNullable<KernelsInfo['attention']>['prefill']>['subgroupMatrix'],
  trial?: AttentionTrial[],
): NonNullable<KernelsInfo['attention']>['prefill'] {
  const subgroupMatrix = {
    ...(sg ? { subgroupMatrix: sg } : {}),
    ...(trial ? { trial: trial.map((t) => ({ kernel: t.kernel, ms: +t.ms.toFixed(4) })) } : {}),
  };
  if (!a.plan) return { kernel: 'per-token', ...subgroupMatrix };
  return {
    kernel: a.kernel,
    tokensPerWorkgroup: a.plan.tokensPerTile,
    headsPerWorkgroup: a.plan.headsPerGroup,
    kvTile: a.plan.kvTile,
    threads: a.plan.threads,
    ...(a.shareKv ? { shareKv: a.shareKv } : {}),
    ...subgroupMatrix,
  };
}

/**
 * `ModelInfo.kernels.attention.prefill.subgroupMatrix`: whether the prefill attention on subgroup matrices
 * runs (`kernel` the model's), and why not.
 */
export function sgmatAttentionInfo(
  kernel: LlamaModel['prefillAttention'],
  support: SubgroupMatrixSupport | undefined,
  choice: SgmatAttentionChoice | undefined,
): NonNullable<NonNullable<KernelsInfo['attention']>['prefill']>['subgroupMatrix'] {
  const selfTest = choice?.selfTest.length ? { selfTest: choice.selfTest } : {};
  if (kernel.kernel === 'sgmat')
    return { chosen: true, ...(kernel.tile ? { tile: sgmatName(kernel.tile) } : {}), ...selfTest };
  const reason =
    choice?.reason ??
    (support?.available
      ? `forced to ${kernel.kernel} (attention.prefill): no self-test or trial`
      : (support?.reason ?? 'no subgroup matrices'));
  return { chosen: false, reason, ...selfTest };
}

/** The K and V cache types a load runs with (the self-test of the sgmat attention reads them). */
export interface KvTypes {
  kvType: KvType;
  vKvType?: KvType;
}

/** The attention a model's prefill runs (the sgmat attention's self-test problem): heads, scale, cache types, Gemma's soft-cap and window. */
export function attentionShapeOf(cfg: LlamaConfig, kv: KvTypes): AttentionShape {
  const gm = cfg.gemma;
  return {
    nHead: cfg.nHead,
    nHeadKv: cfg.nHeadKv,
    headDim: cfg.headDim,
    scale: gm ? gm.attnScale : 1 / Math.sqrt(cfg.headDim),
    kvType: kv.kvType,
    ...(kv.vKvType && kv.vKvType !== kv.kvType ? { vKvType: kv.vKvType } : {}),
    ...(gm?.attnSoftcap ? { softcap: gm.attnSoftcap } : {}),
    ...(gm?.swa ? { window: gm.swa.window } : {}),
  };
}

/** Hooks of {@link resolvePrefillAttention} for tests: the sgmat kernel (a test double) and the trial's timer. */
export interface AttentionTrialHooks {
  /** The kernel the self-test and the trial run (default attention-sgmat-check.ts `SGMAT_ATTENTION`). */
  make?: SgmatAttentionKernel;
  /** The trial's timer (default attention-sgmat-check.ts `timeAttentionKernels`, 512 tokens at depth 0). */
  time?: AttentionTimer;
}

/**
 * Resolves the prefill attention on subgroup matrices.
 * - Asked for (`attention.prefill` `{ kind: 'sgmat' }` without a configuration): self-tested on `gpu` for
 *   this model's attention (kernels/attention-sgmat-check.ts `chooseSgmatAttention`), it runs with the
 *   configuration that passed; otherwise the adapter's float layout ({@link attentionPolicyFor}) runs and
 *   the choice says why.
 * - Not forced either way (`forced` false: no `attention.prefill` option) on an adapter with subgroup
 *   matrices: self-tested likewise, then, where it passes, timed against the adapter's float prefill
 *   attention on the model's whole attention (512 tokens at depth 0, every head; `timeAttentionKernels`),
 *   and the faster runs; the choice records both times (`trial`) and, where float won, the reason. Where
 *   the adapter has none (SwiftShader), nothing runs.
 * - Any other policy (a forced float layout, a hand-made sgmat plan with `tile`) is returned as it is.
 * @throws what GPU work throws on a lost device; never for a kernel's fault (a trial that fails to run the
 *   sgmat kernel keeps the float one, with the reason).
 */
export async function resolvePrefillAttention(
  gpu: GpuContext,
  cfg: LlamaConfig,
  attention: AttentionPolicy,
  kv: KvTypes,
  forced = true,
  hooks: AttentionTrialHooks = {},
): Promise<{ attention: AttentionPolicy; choice?: SgmatAttentionChoice }> {
  const p = attention.prefill;
  const shape = attentionShapeOf(cfg, kv);
  if (!forced && gpu.subgroupMatrix?.available && p !== 'per-token' && p?.kind !== 'sgmat')
    return trialPrefillAttention(gpu, cfg, attention, shape, hooks);
  if (p === undefined || p === 'per-token' || p.kind !== 'sgmat' || p.tile) return { attention };
  const make = p.wgsl ? { wgsl: p.wgsl, workgroups: sgmatAttentionWorkgroups } : hooks.make;
  const choice = await chooseSgmatAttention(gpu, shape, make, p.kvTile);
  const prefill: AttentionPolicy['prefill'] = choice.tile
    ? { ...p, tile: choice.tile, kvTile: choice.kvTile }
    : attentionPolicyFor(gpu, cfg.headDim).prefill;
  return { attention: { ...attention, prefill }, choice };
}

/** The trial of {@link resolvePrefillAttention}: self-test, then the sgmat kernel against `attention`'s float one. */
async function trialPrefillAttention(
  gpu: GpuContext,
  cfg: LlamaConfig,
  attention: AttentionPolicy,
  shape: AttentionShape,
  hooks: AttentionTrialHooks,
): Promise<{ attention: AttentionPolicy; choice: SgmatAttentionChoice }> {
  const make = hooks.make ?? SGMAT_ATTENTION;
  const checked = await chooseSgmatAttention(gpu, shape, make);
  const { tile, kvTile } = checked;
  if (!tile || kvTile === undefined) return { attention, choice: checked };
  const floatLayout =
    typeof attention.prefill === 'object' && attention.prefill.kind !== 'sgmat'
      ? attention.prefill
      : (attentionPolicyFor(gpu, cfg.headDim).prefill as PrefillLayout);
  const sg = { ...shape, tile, kvTile, maxWorkgroupBytes: gpu.limits.maxComputeWorkgroupStorageSize };
  const candidates = {
    sgmat: {
      wgsl: (o: AttentionShape) => make.wgsl({ ...sg, ...o }),
      workgroups: (o: AttentionShape, T: number) => make.workgroups({ ...sg, ...o }, T),
    },
    float: {
      wgsl: (o: AttentionShape) => prefillAttentionWGSL({ ...o, layout: floatLayout }),
      workgroups: (o: AttentionShape, T: number) =>
        prefillAttentionWorkgroups({ ...o, layout: floatLayout }, T),
    },
  };
  const key = `${gpu.info.vendor}|${gpu.info.architecture}|${gpu.info.device}|${gpu.info.description}|${JSON.stringify(shape)}|${JSON.stringify(floatLayout)}`;
  let trial = hooks.time ? undefined : attentionTrialCache.get(key);
  if (!trial) {
    try {
      trial = await (hooks.time ?? timeAttentionKernels)(gpu, shape, candidates);
    } catch (e) {
      return {
        attention,
        choice: {
          ...checked,
          tile: undefined,
          kvTile: undefined,
          reason: `the timed trial failed: ${(e as Error).message}`,
        },
      };
    }
    if (!hooks.time && make === SGMAT_ATTENTION) attentionTrialCache.set(key, trial);
  }
  const ms = (k: AttentionTrialKernel) => trial.find((t) => t.kernel === k)?.ms ?? Infinity;
  if (ms('sgmat') < ms('float')) {
    const prefill: SgmatPrefillLayout = {
      kind: 'sgmat',
      tile,
      kvTile,
      ...(hooks.make ? { wgsl: hooks.make.wgsl } : {}),
    };
    return { attention: { ...attention, prefill }, choice: { ...checked, trial } };
  }
  return {
    attention,
    choice: {
      ...checked,
      tile: undefined,
      kvTile: undefined,
      trial,
      reason: `slower than the float prefill attention in the timed trial (${ms('sgmat').toPrecision(3)} ms against ${ms('float').toPrecision(3)} ms for ${ATTENTION_TRIAL_TOKENS} tokens)`,
    },
  };
}

/** The trial's timings per adapter, model attention and float layout, for the life of the process. */
const attentionTrialCache = new Map<string, AttentionTrial[]>();

/** A decode matmul's layout and how it was chosen ('ffn-trial': the gate+up trial's, with no trial of its own). */
export type FamilyChoice = MmvChoice | { layout: MmvLayout; chosenBy: 'ffn-trial'; trials?: undefined };

/** The matmul kernels of a load ({@link chooseKernels}). */
export interface KernelsChosen {
  /** The mmv layout of each decode matmul mmv runs (none with `mmvLayout: 'off'`). */
  choices: Partial<Record<MatmulFamilyName, FamilyChoice>>;
  prefill: PrefillMatmul;
  /** On GPUs: the float or integer-dot prefill tile and how it was chosen. */
  tileChoice?: TileChoice;
  /** On GPUs: the subgroup-matrix tile's self-test, or why there is none (kernels/sgmat-check.ts). */
  sgmat?: SgmatChoice;
  /** On GPUs: the integer subgroup-matrix tile's self-test, or why there is none. */
  sgmatInt?: SgmatChoice;
  /** On GPUs: the large f16 subgroup-matrix tile's (64 tokens × 128 rows) self-test, or why there is none. */
  sgmatBig?: SgmatChoice;
  /** The adapter's subgroup-matrix support (device.ts). */
  sgmatSupport?: SubgroupMatrixSupport;
  /** The prefill attention on subgroup matrices: its self-test and choice where asked for ({@link resolvePrefillAttention}). */
  sgmatAttention?: SgmatAttentionChoice;
  /**
   * Whether the plan's `smallBatch` is the caller's option, the adapter's default, or (`cached`) an earlier
   * load's trial of the same model and kernels on this adapter, whose rows `smallBatchTrials` keeps.
   */
  smallBatchBy?: 'option' | 'adapter' | 'cached';
  smallBatchTrials?: SmallBatchTrial[];
  /** Where the load runs the small-batch trial: the key it remembers the outcome under (model/small-batch.ts). */
  smallBatchKey?: string;
}

/**
 * What a forced `prefill: { kind: 'tile', subgroupMatrix }` runs: the asked subgroup-matrix tile where its
 * self-test passed (`choice.tile`); otherwise, for an integer one (`'int8'` or a shape with `int`), the
 * integer-dot tile where WGSL has packed_4x8_integer_dot_product (the integer tile's own tested path on the
 * same int8 activations), else the float tile (the integer-dot one where the option also sets `intDot`).
 * The choice's `reason` gains which tile runs instead.
 * @param prefill the option (kind 'tile'); `choice` the asked tile's self-test ({@link chooseKernels}).
 */
export function forcedSubgroupMatrixPrefill(
  prefill: Extract<PrefillMatmul, { kind: 'tile' }>,
  choice: SgmatChoice | undefined,
  askInt: boolean,
  gpu: Pick<GpuContext, 'wgslFeatures'>,
): { tileChoice: TileChoice; choice: SgmatChoice | undefined } {
  const sg = prefill.subgroupMatrix ? choice?.tile : undefined;
  if (sg || !prefill.subgroupMatrix)
    return {
      tileChoice: {
        intDot: !sg && Boolean(prefill.intDot),
        chosenBy: 'option',
        ...(sg ? { subgroupMatrix: sg } : {}),
      },
      choice,
    };
  const hasDot = gpu.wgslFeatures.has('packed_4x8_integer_dot_product');
  const intDot = Boolean(prefill.intDot) || (askInt && hasDot);
  const instead = intDot
    ? 'the integer-dot tile runs instead'
    : `the float tile runs instead${askInt ? ' (no packed_4x8_integer_dot_product for the integer-dot tile)' : ''}`;
  return {
    tileChoice: { intDot, chosenBy: 'option' },
    choice: choice && { ...choice, reason: `${choice.reason ?? 'not chosen'}; ${instead}` },
  };
}

/**
 * Chooses the decode mmv layouts (the caller's, else by timed trials: one per matmul shape on GPUs, the
 * gate+up's for every matmul on software adapters, {@link chooseMmvLayout}) and the prefill kernels (the
 * caller's, else {@link prefillMatmulFor} the adapter, and on GPUs the float or integer-dot tile by a
 * timed trial on the gate+up shape, {@link choosePrefillTile}).
 * @param base the plan's other parts ({@link adapterDefaults}): the trials time the layout and fusion it runs.
 * @throws what the trials' GPU work throws (a lost device).
 */
export async function chooseKernels(
  gpu: GpuContext,
  file: GgufFile,
  cfg: LlamaConfig,
  o: KernelOverrides,
  base: Pick<KernelPlan, 'repack' | 'splitDecodeSegments'>,
): Promise<KernelsChosen> {
  const forced = o.mmvLayout;
  const choices: KernelsChosen['choices'] = {};
  if (forced !== 'off') {
    const shapes = decodeMatmulShapes(file, cfg, base.repack, !base.splitDecodeSegments);
    const perMatmul = (o.mmvTrials ?? (gpu.info.isFallback ? 'one' : 'per-matmul')) === 'per-matmul';
    // On GPUs each trial reads its matrix from memory as a decode token does (kernels/tune.ts
    // TRIAL_ROTATE_BYTES): rotated over as many bytes as the model has, up to the cap.
    let fileBytes = 0;
    for (const t of file.tensors.values()) fileBytes += t.nBytes;
    const rotate = gpu.info.isFallback ? 0 : Math.min(TRIAL_ROTATE_BYTES, fileBytes);
    // The one trial's matmul: gate+up, or the first matmul mmv runs where gate+up is not one of them.
    const [trialFamily, trialShape] = shapes.find(([f]) => f === 'ffn') ?? shapes[0] ?? [];
    let one: MmvChoice | undefined; // its choice, for every matmul when !perMatmul
    for (const [family, shape] of shapes) {
      const given = forced && ('lanes' in forced ? forced : forced[family]);
      if (given) choices[family] = { layout: given, chosenBy: 'option' };
      else if (perMatmul) choices[family] = await chooseMmvLayout(gpu, shape, undefined, rotate);
      else {
        one ??= await chooseMmvLayout(gpu, trialShape!, undefined, rotate);
        choices[family] = family === trialFamily ? one : { layout: one.layout, chosenBy: 'ffn-trial' };
      }
    }
  }
  let prefill = o.prefill ?? prefillMatmulFor(gpu, layerMatmulWeights(cfg));
  let tileChoice: TileChoice | undefined;
  let sgmat: SgmatChoice | undefined;
  let sgmatInt: SgmatChoice | undefined;
  let sgmatBig: SgmatChoice | undefined;
  if (prefill.kind === 'tile') {
    // The subgroup-matrix tiles: the f16 one self-tested against the float tile, the integer one against
    // the integer-dot tile, before any use (kernels/sgmat-check.ts).
    const askSg = o.prefill ? prefill.subgroupMatrix : true;
    const askInt = askSg === 'int8' || (typeof askSg === 'object' && askSg.int);
    const askBig = askSg === 'big' || (typeof askSg === 'object' && askSg.big);
    // The large tile: a trial candidate (no prefill option), or forced.
    if ((askSg === true && !o.prefill) || askBig) {
      sgmatBig = await chooseSubgroupMatrixBigTile(gpu);
      // A forced shape keeps the single buffer the device's workgroup memory needs.
      if (typeof askSg === 'object' && sgmatBig.tile)
        sgmatBig = {
          ...sgmatBig,
          tile: { ...askSg, ...(sgmatBig.tile.singleBuffer ? { singleBuffer: true } : {}) },
        };
    }
    if (askSg && !askInt && !askBig) {
      sgmat = await chooseSubgroupMatrixTile(gpu);
      if (typeof askSg === 'object' && sgmat.tile) sgmat = { ...sgmat, tile: askSg };
    }
    if (askSg === true || askInt) {
      sgmatInt = await chooseSubgroupMatrixIntTile(gpu);
      // A forced shape runs in the i8 unit the self-test settled (unless the option names one).
      if (typeof askSg === 'object' && sgmatInt.tile)
        sgmatInt = { ...sgmatInt, tile: { ...askSg, i8Units: askSg.i8Units ?? sgmatInt.tile.i8Units } };
    }
    if (o.prefill) {
      // The asked tile where its self-test passed, else the integer-dot or float tile, the reason saying which.
      const forced = forcedSubgroupMatrixPrefill(
        prefill,
        askInt ? sgmatInt : askBig ? sgmatBig : sgmat,
        Boolean(askInt),
        gpu,
      );
      if (askInt) sgmatInt = forced.choice;
      else if (askBig) sgmatBig = forced.choice;
      else sgmat = forced.choice;
      tileChoice = forced.tileChoice;
      const sg = tileChoice.subgroupMatrix;
      prefill = { kind: 'tile', intDot: tileChoice.intDot, ...(sg ? { subgroupMatrix: sg } : {}) };
    } else {
      const ffn = decodeMatmulShapes(file, cfg, base.repack, true).find(([f]) => f === 'ffn')?.[1];
      tileChoice = ffn
        ? await choosePrefillTile(gpu, ffn, sgmat?.tile, sgmatInt?.tile, sgmatBig?.tile)
        : { intDot: false, chosenBy: 'unavailable' };
      prefill = {
        kind: 'tile',
        intDot: tileChoice.intDot,
        ...(tileChoice.subgroupMatrix ? { subgroupMatrix: tileChoice.subgroupMatrix } : {}),
      };
    }
  }
  return { choices, prefill, tileChoice, sgmat, sgmatInt, sgmatBig, sgmatSupport: gpu.subgroupMatrix };
}

/**
 * The parts of the plan no trial chooses, from `o` or the adapter: the fallback decode kernel ('rows' on a
 * software adapter, 'ksplit' on a GPU), Q/K/V split per segment on software adapters, the attention of
 * {@link attentionPolicyFor} with `o.attention` over it, planes unless `o.repack` is false.
 */
export function adapterDefaults(
  gpu: GpuContext,
  cfg: LlamaConfig,
  o: KernelOverrides,
): Omit<KernelPlan, 'mmv' | 'prefill' | 'chosen'> {
  const software = gpu.info.isFallback;
  return {
    decodeKernel: o.decodeKernel ?? (software ? 'rows' : 'ksplit'),
    splitDecodeSegments: o.splitDecodeSegments ?? software,
    attention: { ...attentionPolicyFor(gpu, cfg.headDim), ...o.attention },
    repack: o.repack !== false,
    sampleTopP: !software,
    smallBatch: smallBatchFor(o.smallBatch, software, {
      prefillForced: o.prefill !== undefined,
      matmulWeights: layerMatmulWeights(cfg),
    }),
  };
}

/** The plan of `base` with the trials' (or the caller's) mmv layouts and prefill kernels. */
export function planWith(base: ReturnType<typeof adapterDefaults>, chosen: KernelsChosen): KernelPlan {
  return {
    ...base,
    mmv: Object.fromEntries(Object.entries(chosen.choices).map(([f, c]) => [f, c.layout])),
    prefill: chosen.prefill,
    chosen,
  };
}

/**
 * Checks the caller's kernel overrides: their form (without `gpu`, before anything is unloaded or
 * fetched), then with `gpu` what this adapter can run.
 * @throws EngineError('invalid_argument') naming the option and what is wrong with it.
 */
export function checkKernelOverrides(o: KernelOverrides, gpu?: GpuContext): void {
  checkMmvLayoutOption(o.mmvLayout, o.mmvTrials);
  if (o.smallBatch !== undefined && !SMALL_BATCH_OPTIONS.includes(o.smallBatch))
    throw new EngineError(
      'invalid_argument',
      `smallBatch must be ${SMALL_BATCH_OPTIONS.map((v) => `'${v}'`)
        .join(', ')
        .replace(/, ([^,]*)$/, ' or $1')} (got ${JSON.stringify(o.smallBatch)})`,
    );
  const small = o.attention?.small;
  if (small !== undefined && small !== 'flash' && small !== 'prefill')
    throw new EngineError(
      'invalid_argument',
      `attention.small must be 'flash' or 'prefill' (got ${JSON.stringify(small)})`,
    );
  checkDecodeAttentionOption(o.attention);
  if (!gpu) return;
  checkPrefillOption(o.prefill, gpu);
  checkMmvLayoutAdapter(o.mmvLayout, gpu);
  checkAttentionAdapter(o.attention, gpu);
}

/**
 * The kernel plan of `file` on `gpu`: the caller's overrides, checked; the adapter's defaults for the rest
 * ({@link adapterDefaults}); the mmv layouts and the GPU prefill tile by timed trials ({@link chooseKernels};
 * remembered per adapter and shape, kernels/tune.ts); an asked-for prefill attention on subgroup matrices
 * self-tested for the model's attention and `kv` cache types ({@link resolvePrefillAttention}); a
 * small-batch trial ('trial') replaced by an earlier load's outcome for the same model, kernels and adapter
 * (model/small-batch.ts `smallBatchTrialKey`: only the chosen kernel set is then compiled), else keyed for
 * the load to remember.
 * @throws EngineError('invalid_argument') for an override this adapter cannot run; what the trials' GPU
 *   work throws (a lost device).
 */
export async function resolveKernelPlan(
  gpu: GpuContext,
  file: GgufFile,
  cfg: LlamaConfig,
  o: KernelOverrides = {},
  kv: KvTypes = { kvType: 'f16' },
): Promise<KernelPlan> {
  checkKernelOverrides(o, gpu);
  checkDecodeAttentionModel(o.attention, gpu, cfg.headDim);
  const defaults = adapterDefaults(gpu, cfg, o);
  const { attention, choice } = await resolvePrefillAttention(
    gpu,
    cfg,
    defaults.attention,
    kv,
    o.attention?.prefill !== undefined,
  );
  const base = { ...defaults, attention };
  const chosen: KernelsChosen = {
    ...(await chooseKernels(gpu, file, cfg, o, base)),
    smallBatchBy: o.smallBatch === undefined ? ('adapter' as const) : ('option' as const),
  };
  const plan = planWith(base, choice ? { ...chosen, sgmatAttention: choice } : chosen);
  if (plan.smallBatch !== 'trial') return plan;
  const { chosen: _, ...kernels } = plan;
  const key = smallBatchTrialKey(
    gpu.info,
    cfg,
    [...file.tensors.values()].map((t) => [t.name, t.typeName]),
    kv,
    kernels,
  );
  const hit = cachedSmallBatch(key);
  if (!hit) return { ...plan, chosen: { ...plan.chosen!, smallBatchKey: key } };
  return {
    ...plan,
    smallBatch: hit.maxTokens,
    chosen: { ...plan.chosen!, smallBatchBy: 'cached', smallBatchTrials: hit.trials },
  };
}

/** A trial's timings as ModelInfo reports them (layout names, ms to 4 decimals). */
const trialsInfo = (trials: MmvChoice['trials']) =>
  trials?.map((t) => ({ layout: layoutName(t.layout), ms: +t.ms.toFixed(4) }));

/**
 * `ModelInfo.kernels`: what the loaded model runs, as its plan says ({@link resolveKernelPlan}) and the
 * model counted at load (matmuls on mmv, planar and split tensors, dispatches per token, attention plans,
 * the argmax's and the GPU sampler's dispatches: {@link pickInfo}).
 * @param o `sampling`: the engine's `WebGpuEngineOptions.sampling` (default 'gpu').
 */
export function describePlan(m: LlamaModel, o: { sampling?: 'gpu' | 'cpu' } = {}): KernelsInfo {
  const plan = m.plan;
  const pick = pickInfo(m.cfg.nVocab, m.pickDispatches, {
    sampleTopP: plan.sampleTopP,
    sampling: o.sampling,
  });
  const fallbackKernel = plan.decodeKernel;
  const { choices, tileChoice, sgmat, sgmatInt, sgmatBig, sgmatSupport, sgmatAttention } = plan.chosen ?? {
    choices: {},
  };
  // The gate+up's own choice (a trial or the option): never 'ffn-trial'.
  const choice = choices.ffn as MmvChoice | undefined;
  const mmv = m.decodeMatmuls.mmv > 0;
  return {
    decode: mmv ? 'mmv' : fallbackKernel,
    mmvLayout: choice && mmv ? layoutName(choice.layout) : undefined,
    chosenBy: mmv ? choice?.chosenBy : undefined,
    trials: trialsInfo(choice?.trials),
    mmvLayouts: mmv
      ? Object.fromEntries(
          Object.entries(choices).map(([f, c]) => [
            f,
            {
              layout: layoutName(c.layout),
              chosenBy: c.chosenBy,
              trials: trialsInfo(c.trials),
              ...('copies' in c && c.copies ? { trialCopies: c.copies } : {}),
            },
          ]),
        )
      : undefined,
    fallback: fallbackKernel,
    matmuls: { ...m.decodeMatmuls },
    planarTensors: m.planarTensors,
    splitTensors: m.splitTensors,
    dispatchesPerToken: m.dispatchesPerToken,
    splitSegments: plan.splitDecodeSegments,
    smallBatch: {
      ...m.smallBatch,
      ...(m.smallBatchAttention ? { attention: m.smallBatchAttention } : {}),
      ...(m.smallBatch.trials
        ? {
            trials: m.smallBatch.trials.map((t) => ({
              tokens: t.tokens,
              mmvMs: +t.mmvMs.toFixed(4),
              tileMs: +t.tileMs.toFixed(4),
            })),
          }
        : {}),
    },
    attention: {
      ...(m.decodeAttention === 'flash'
        ? {
            decode: 'flash',
            layout: plan.attention.layout.kind,
            lanes: plan.attention.layout.lanes ?? 1,
            minChunk: plan.attention.minChunk,
            targetWorkgroups: plan.attention.targetWorkgroups,
          }
        : { decode: 'prefill-kernel' }),
      prefill: prefillAttentionInfo(
        m.prefillAttention,
        sgmatAttentionInfo(m.prefillAttention, sgmatSupport, sgmatAttention),
        sgmatAttention?.trial,
      ),
    },
    argmax: pick.argmax,
    sampler: pick.sampler,
    prefill:
      plan.prefill.kind === 'tile'
        ? {
            matmul: 'tile',
            tokensPerTile: m.prefillTile,
            intDot: MATMUL_FAMILIES.filter((f) => m.intDotFamilies.has(f)),
            tileChosenBy: tileChoice?.chosenBy,
            tileTrials: tileChoice?.trials?.map((t) => ({ tile: t.tile, ms: +t.ms.toFixed(4) })),
            subgroupMatrix: subgroupMatrixInfo(sgmatSupport, sgmat, tileChoice, sgmatInt, sgmatBig),
          }
        : {
            matmul: 'mmv',
            mmvLayout: layoutName(plan.prefill.layout),
            tokensPerTile: m.prefillTile,
            splitSegments: plan.prefill.splitSegments,
            normPass: m.normPass,
          },
  };
}
