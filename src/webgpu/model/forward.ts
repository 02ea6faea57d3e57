/**
 * The forward pass: which kernel runs each step, and on which buffers ({@link planForward}), for decode
 * (one token) and prefill (a batch), planned once at load before anything is compiled (dispatch.ts
 * compiles the distinct sources and binds them). Read {@link planLayer} for a layer's steps in order, as
 * llama2.c's `forward()`; then the output matmul (final norm fused) and the argmax or the GPU sampler.
 *
 *   x = token_embd[ids] (· √nEmbd for Gemma)               [T, nEmbd]
 *   per layer: planLayer
 *   logits = W_out · RMSNorm(x[T−1])                       [nVocab]
 *   next   = argmax(logits) or a draw                      on the GPU; only this u32 is read back
 */

import { EngineError } from '../../core/errors.ts';
import type { KvType } from '../../core/types.ts';
import type { LlamaConfig } from '../../model/config.ts';
import type { KernelPlan } from '../kernel-plan.ts';
import { argmaxKernels } from '../kernels/argmax.ts';
import {
  attentionWGSL,
  attentionWorkgroupSize,
  flashCombineWGSL,
  flashCombineWorkgroups,
  flashHeadGroups,
  flashSupports,
} from '../kernels/attention.ts';
import { flashDecodeWGSL } from '../kernels/attention-decode.ts';
import {
  type PrefillAttentionPlan,
  type PrefillLayout,
  prefillAttentionPlan,
  prefillAttentionSupports,
  prefillAttentionWGSL,
} from '../kernels/attention-prefill.ts';
import { prefillAttentionSgmatWGSL, sgmatAttentionPlan } from '../kernels/attention-sgmat.ts';
import { type KernelSource, kernelSource } from '../kernels/bindings.ts';
import { type WeightType, WG } from '../kernels/common.ts';
import { embedWGSL } from '../kernels/embed.ts';
import { qkNormRopeWGSL } from '../kernels/headnorm.ts';
import { isQuantKv, kvQuantizeWGSL, kvQuantizeWorkgroupsX } from '../kernels/kv-quant.ts';
import { type MatmulSpec, partBinding } from '../kernels/llama-ops.ts';
import {
  gemvWGSL,
  gemvWorkgroupsX,
  type MatmulOptions,
  matmulWGSL,
  matmulWorkgroupsX,
  rowsWGSL,
  rowsWorkgroupsX,
} from '../kernels/matmul.ts';
import { mmmIntDotCovers, mmmWGSL, mmmWorkgroupsX, TILE_ROWS, TILE_TOKENS } from '../kernels/mmm.ts';
import { sgmatTileCovers, sgmatTileDims, sgmatTileWGSL } from '../kernels/mmm-sgmat.ts';
import { type MmvLayout, mmvReduceBytes, mmvSupports, mmvWGSL, mmvWorkgroupsX } from '../kernels/mmv.ts';
import { rmsNormAddWGSL, rmsNormRowsWGSL } from '../kernels/postnorm.ts';
import {
  type SamplePassRole,
  type SampleTopPPass,
  sampleCandidatesWGSL,
  samplePassPlan,
  sampleTopPWGSL,
  sampleWGSL,
} from '../kernels/sample.ts';
import type { KernelFamilyName, MatmulFamilyName, PrefillMatmul, SgmatPrefillLayout } from './options.ts';
import { SMALL_BATCH_MAX } from './small-batch.ts';
import type { RunState } from './state.ts';
import { type GpuWeight, type ModelSpecs, requireWeight } from './weights.ts';

/**
 * Decode (one token per step: the matrix × vector kernels), prefill (a batch: the matrix × matrix ones), or
 * a small batch (2 … `KernelPlan.smallBatch` tokens: the matrix × vector kernels at
 * {@link SMALL_BATCH_TT} tokens per workgroup row, with flash-decoding's attention where
 * {@link smallBatchFlash}, else the prefill attention).
 */
export type Mode = 'decode' | 'prefill' | 'small';

/**
 * Tokens per workgroup row of a small batch's mmv kernels: 8, so a batch of up to 8 tokens reads the
 * weights in one pass, as llama.cpp's matrix × vector kernels take up to 8 columns (CUDA mmvq's
 * `ncols_dst` ≤ `MMVQ_MAX_BATCH_SIZE`, Vulkan's `NUM_COLS`). 4 or 2 where the layout's reduction memory does
 * not hold 8 tokens ({@link smallBatchTokensPerPass}). On SwiftShader (60M Q4_K_M, BENCHMARKS.md 2026-12-05)
 * 8 ran 7–8-token batches 1.1–1.2× faster than two passes of 4, and 2–4-token ones 1.4–1.5× slower (the
 * register tile computes all 8 columns): both faster than the prefill tile.
 */
export const SMALL_BATCH_TT = 8;

/**
 * Tokens per workgroup row of `spec`'s small-batch mmv kernel with `layout`: {@link SMALL_BATCH_TT}, or 4
 * or 2 where its lane reduction would need more workgroup memory than WebGPU's default 16 KiB
 * (kernels/mmv.ts `mmvReduceBytes`), or 0 where none fits (that matmul keeps the prefill kernel).
 */
export function smallBatchTokensPerPass(layout: MmvLayout, spec: MatmulSpec): number {
  const dots = Math.max(...spec.segments.map((g) => g.dots.length));
  for (const TT of [SMALL_BATCH_TT, 4, 2])
    if (mmvReduceBytes(layout, TT, dots, Boolean(spec.norm)) <= 16384) return TT;
  return 0;
}

/** Tokens per thread of the old prefill kernel (matmul.ts), kept where the others do not apply. */
export const PREFILL_TT = 8;

/** One dispatch of the forward pass: a pipeline, its bind group and its grid. */
export interface Dispatch {
  family: KernelFamilyName;
  pipeline: GPUComputePipeline;
  group: GPUBindGroup;
  /** Workgroups along x. */
  wgX: number;
  /**
   * Workgroups along y: one per token, one per token tile (the matmul's TT), one, or one per attention
   * chunk (`chunks`); `combine`: one per token, dispatched only when the step has more than one chunk.
   */
  y: 'tokens' | 'tiles' | 'one' | 'chunks' | 'combine';
  /** Tokens per workgroup row when `y` is 'tiles'. */
  tile?: number;
}

/** A dispatch before compiling: its source and its buffers by binding name (undefined: not bound). */
export type PlannedKernel = Omit<Dispatch, 'pipeline' | 'group'> & {
  src: KernelSource;
  buffers: Record<string, GPUBuffer | undefined>;
};

/**
 * One of the GPU sampler's passes, with what it does (kernels/sample.ts `SamplePassRole`): the host
 * encodes only the roles a request needs (`selectSamplePasses`).
 */
export type PlannedSamplePass = PlannedKernel & { role: SamplePassRole };

/**
 * What planning the forward pass needs of a load: its kernel plan (kernel-plan.ts), its KV cache's element
 * types (K's `kvType`, V's `vKvType` where it differs) and length in tokens.
 */
export type ForwardConfig = KernelPlan & { kvType: KvType; vKvType?: KvType; nCtx: number };

/** Threads (tokens) per workgroup of the prefill norm pass (kernels/postnorm.ts `rmsNormRowsWGSL`). */
export const NORM_PASS_THREADS = 16;

/**
 * Does prefill write each batch's input RMSNorm once per layer (options.ts `PrefillMatmul` normPass: the
 * mmv choice asks for it and nEmbd is a multiple of 4, as rmsNormRowsWGSL needs), the Q/K/V and gate/up
 * matmuls then reading the run state's `xn` without a norm of their own?
 */
export function usesNormPass(prefill: PrefillMatmul, cfg: Pick<LlamaConfig, 'nEmbd'>): boolean {
  return prefill.kind === 'mmv' && prefill.normPass === true && cfg.nEmbd % 4 === 0;
}

/**
 * Does the plan ask for the small-batch kernels (`smallBatch` > 1 tokens, or 'trial': compiled for the
 * load's timed trial, llama.ts `LlamaModel.load`), and does mmv run any decode matmul (they are the
 * decode layouts at a few tokens per row)?
 */
export function plansSmallBatch(choice: Pick<KernelPlan, 'smallBatch' | 'mmv'>): boolean {
  const sb = choice.smallBatch;
  return (sb === 'trial' || (sb !== undefined && sb > 1)) && Object.keys(choice.mmv).length > 0;
}

/**
 * Does a small batch's attention run flash-decoding ({@link SMALL_BATCH_MAX} query tokens per workgroup over
 * chunks of the KV cache, options.ts `AttentionPolicy.small`)? Where the plan runs small batches, asks for
 * `flash` (the default) and the head shape takes the flash kernel (attention.ts `flashSupports`).
 */
export function smallBatchFlash(
  cfg: Pick<LlamaConfig, 'nHead' | 'nHeadKv' | 'headDim'>,
  choice: Pick<KernelPlan, 'smallBatch' | 'mmv' | 'attention'>,
): boolean {
  return plansSmallBatch(choice) && (choice.attention.small ?? 'flash') === 'flash' && flashSupports(cfg);
}

/** Does decode run `spec` through mmv (a layout is set and K is whole 32-weight chunks)? */
export function usesMmv(choice: ForwardConfig, spec: MatmulSpec, family: MatmulFamilyName): boolean {
  return choice.mmv[family] !== undefined && mmvSupports(spec.K, ['F32']);
}

/**
 * The matmul kernel variant for `spec`, for decode (T ≤ 1 token per workgroup row), prefill (the
 * `choice.prefill` kernels) or a small batch (the family's decode mmv layout at
 * {@link smallBatchTokensPerPass} tokens per workgroup row; the prefill kernel where mmv does not run
 * that matmul), and the tokens per workgroup row of its dispatch. Adds `family` to `intDotFamilies` when
 * it runs the integer-dot tile.
 */
export function matmulSource(
  choice: ForwardConfig,
  label: string,
  spec: MatmulSpec,
  mode: Mode,
  family: MatmulFamilyName,
  intDotFamilies: Set<MatmulFamilyName>,
): { src: KernelSource; wgX: number; tile: number } {
  if (mode === 'small' && !spec.lastTokenOnly) {
    const layout = choice.mmv[family];
    const TT = layout && usesMmv(choice, spec, family) ? smallBatchTokensPerPass(layout, spec) : 0;
    if (layout && TT > 0) {
      const o = { ...spec, TT, layout };
      return { src: kernelSource(label, mmvWGSL(o)), wgX: mmvWorkgroupsX(o.segments, layout), tile: TT };
    }
    return matmulSource(choice, label, spec, 'prefill', family, intDotFamilies);
  }
  // The prompt's one-token output matmul is decode-shaped: the decode kernel (a prefill tile of TT
  // tokens computes TT copies of the last token's row: the 60M Q4_K_M model's Q6_K output, 32000 × 512,
  // took ~134 ms per prompt as a 16-token tile against ~63 ms as the decode kernel, SwiftShader in Node).
  if (mode === 'prefill' && !spec.lastTokenOnly) {
    const p = choice.prefill;
    if (p.kind === 'tile') {
      const o: MatmulOptions = { ...spec, TT: TILE_TOKENS };
      // The integer subgroup-matrix tile takes INT_DOT_TYPES only: other weights keep the float tile.
      const sg =
        typeof p.subgroupMatrix === 'object' && sgmatTileCovers(o, p.subgroupMatrix)
          ? p.subgroupMatrix
          : undefined;
      const intDot = !sg && typeof p.subgroupMatrix !== 'object' && p.intDot === true && mmmIntDotCovers(o);
      if (intDot) intDotFamilies.add(family);
      // The dispatch follows the tile (the large subgroup-matrix tile: 64 tokens × 128 rows).
      const dims = sg ? sgmatTileDims(sg) : { tokens: TILE_TOKENS, rows: TILE_ROWS };
      return {
        src: kernelSource(label, sg ? sgmatTileWGSL(o, sg) : mmmWGSL(o, { intDot })),
        wgX: mmmWorkgroupsX(o.segments, dims.rows),
        tile: dims.tokens,
      };
    }
    if (p.kind === 'mmv' && mmvSupports(spec.K, ['F32'])) {
      const o = { ...spec, TT: p.tokens, layout: p.layout };
      return {
        src: kernelSource(label, mmvWGSL(o)),
        wgX: mmvWorkgroupsX(o.segments, p.layout),
        tile: p.tokens,
      };
    }
    const o: MatmulOptions = { ...spec, TT: PREFILL_TT };
    return {
      src: kernelSource(label, matmulWGSL(o)),
      wgX: matmulWorkgroupsX(o.segments),
      tile: PREFILL_TT,
    };
  }
  const o: MatmulOptions = { ...spec, TT: 1 };
  const layout = choice.mmv[family];
  if (layout && usesMmv(choice, o, family)) {
    return {
      src: kernelSource(label, mmvWGSL({ ...o, layout })),
      wgX: mmvWorkgroupsX(o.segments, layout),
      tile: 1,
    };
  }
  return choice.decodeKernel === 'ksplit'
    ? { src: kernelSource(label, gemvWGSL(o)), wgX: gemvWorkgroupsX(o.segments), tile: 1 }
    : { src: kernelSource(label, rowsWGSL(o)), wgX: rowsWorkgroupsX(o.segments), tile: 1 };
}

/** A kernel of a fixed grid: `wgX` workgroups by one row per token (or `y` = 'one', …). */
function fixed(
  family: KernelFamilyName,
  label: string,
  code: string,
  wgX: number,
  buffers: PlannedKernel['buffers'],
  y: Dispatch['y'] = 'tokens',
): PlannedKernel {
  return { family, src: kernelSource(label, code), wgX, y, buffers };
}

/** The attention kernels of every layer (Gemma's Q scale and soft-cap; its SWA layers' window). */
interface AttentionCodes {
  /** Layer l's one-workgroup-per-(head, token) kernel. */
  perToken(l: number): string;
  /** Layer l's tiled (or `rows`) prefill kernel, where the shape and the policy allow it. */
  prefill(l: number): string | undefined;
  /** Layer l's flash-decoding kernel, where the shape allows it, and the combine of its chunks. */
  flash(l: number): string | undefined;
  combine?: string;
  /** The same for small batches ({@link SMALL_BATCH_MAX} query tokens), where {@link smallBatchFlash}. */
  flashSmall(l: number): string | undefined;
  combineSmall?: string;
  prefillAttn?: { layout: PrefillLayout | SgmatPrefillLayout; plan: PrefillAttentionPlan };
  /** Workgroups per attention chunk of the flash kernel (nHeadKv × head groups); 0 without flash. */
  flashWorkgroups: number;
  /** The same for the small-batch flash kernel; 0 where small batches do not run flash. */
  flashSmallWorkgroups: number;
}

function attentionCodes(c: LlamaConfig, choice: ForwardConfig): AttentionCodes {
  const gm = c.gemma;
  const common = {
    nHead: c.nHead,
    nHeadKv: c.nHeadKv,
    headDim: c.headDim,
    scale: gm ? gm.attnScale : 1 / Math.sqrt(c.headDim),
    kvType: choice.kvType,
    ...(choice.vKvType && choice.vKvType !== choice.kvType ? { vKvType: choice.vKvType } : {}),
  };
  const softcap = gm?.attnSoftcap ? { softcap: gm.attnSoftcap } : {};
  const windowOf = (l: number) => (gm?.swa?.layers[l] ? { window: gm.swa.window } : {});
  // Prefill attention: tiles of query tokens × the heads of a KV group (kernels/attention-prefill.ts), or
  // on subgroup matrices (kernels/attention-sgmat.ts) where the plan chose it (self-tested at load).
  const prefillLayout = choice.attention.prefill ?? { kind: 'tiled' };
  if (prefillLayout !== 'per-token' && prefillLayout.kind === 'sgmat') {
    const { tile, kvTile } = prefillLayout;
    if (!tile || kvTile === undefined)
      throw new EngineError(
        'invalid_argument',
        "attention.prefill { kind: 'sgmat' } has no configuration yet: resolve the plan first (kernel-plan.ts resolveKernelPlan self-tests it and sets tile and kvTile)",
      );
    const sgOpts = { ...common, ...softcap, tile, kvTile, maxWorkgroupBytes: Number.POSITIVE_INFINITY };
    const make = prefillLayout.wgsl ?? prefillAttentionSgmatWGSL;
    const base = attentionCodes(c, {
      ...choice,
      attention: { ...choice.attention, prefill: { kind: 'tiled' } },
    });
    return {
      ...base,
      prefill: (l) => make({ ...sgOpts, ...windowOf(l) }),
      prefillAttn: { layout: prefillLayout, plan: sgmatAttentionPlan(sgOpts) },
    };
  }
  const prefillOpts =
    prefillLayout !== 'per-token' && prefillAttentionSupports(c)
      ? { ...common, layout: prefillLayout, ...softcap }
      : undefined;
  const flashOpts = {
    ...common,
    maxTokens: 1,
    nCtx: choice.nCtx,
    layout: choice.attention.layout,
    ...softcap,
  };
  const flash = flashSupports(c);
  const small = smallBatchFlash(c, choice);
  const smallOpts = { ...flashOpts, maxTokens: SMALL_BATCH_MAX };
  return {
    perToken: (l) =>
      attentionWGSL({
        ...common,
        // 16 threads, fewer where their partials would not fit (head size > 190: Gemma's 256)
        threads:
          choice.decodeKernel === 'ksplit' ? undefined : Math.min(16, attentionWorkgroupSize(c.headDim)),
        ...softcap,
        ...windowOf(l),
      }),
    prefill: (l) => prefillOpts && prefillAttentionWGSL({ ...prefillOpts, ...windowOf(l) }),
    flash: (l) => (flash ? flashDecodeWGSL({ ...flashOpts, ...windowOf(l) }) : undefined),
    combine: flash ? flashCombineWGSL({ nHead: c.nHead, headDim: c.headDim, maxTokens: 1 }) : undefined,
    flashSmall: (l) => (small ? flashDecodeWGSL({ ...smallOpts, ...windowOf(l) }) : undefined),
    combineSmall: small
      ? flashCombineWGSL({ nHead: c.nHead, headDim: c.headDim, maxTokens: SMALL_BATCH_MAX })
      : undefined,
    prefillAttn: prefillOpts && { layout: prefillOpts.layout, plan: prefillAttentionPlan(prefillOpts) },
    flashWorkgroups: flash ? c.nHeadKv * flashHeadGroups(flashOpts).groupsPerKvHead : 0,
    flashSmallWorkgroups: small ? c.nHeadKv * flashHeadGroups(smallOpts).groupsPerKvHead : 0,
  };
}

/** The quantize-on-write kernel of a load whose K or V cache is Q8_0/Q4_0 (else undefined). */
function kvQuantPlan(c: LlamaConfig, choice: ForwardConfig): PlanContext['kvQuant'] {
  const o = { kvDim: c.nHeadKv * c.headDim, kType: choice.kvType, vType: choice.vKvType ?? choice.kvType };
  if (!isQuantKv(o.kType) && !isQuantKv(o.vType)) return undefined;
  return { code: kvQuantizeWGSL(o), wgX: kvQuantizeWorkgroupsX(o) };
}

/** What the planning of one layer needs. */
interface PlanContext {
  cfg: LlamaConfig;
  s: RunState;
  choice: ForwardConfig;
  specs: ModelSpecs;
  codes: AttentionCodes;
  intDotFamilies: Set<MatmulFamilyName>;
  /** Per-layer Q/K/V bias buffers (qwen2), else empty. */
  qkvBias: (GPUBuffer | undefined)[];
  W(name: string): GpuWeight;
  qkNormCode?: string;
  /** The quantize-on-write kernel (kernels/kv-quant.ts) where K or V is Q8_0/Q4_0, and its workgroups. */
  kvQuant?: { code: string; wgX: number };
  postNormCode?: string;
  /** The prefill norm pass's kernel for a norm weight type, where {@link usesNormPass}. */
  normRowsCode?: (normType: WeightType) => string;
}

/** The first buffer of a vector weight (norm weights are never split). */
const vec = (x: PlanContext, name: string) => x.W(name).parts[0].buffer;

/** `w_<role>`, `w_<role>_1`, … bound to the parts of `w`. */
const partsOf = (role: string, w: GpuWeight) =>
  Object.fromEntries(w.parts.map((p, i) => [partBinding(role, i), p.buffer]));

/** The dispatches of a fused matmul: one per spec, or one per segment where the choice splits them. */
function matmuls(
  x: PlanContext,
  family: MatmulFamilyName,
  label: string,
  specs: MatmulSpec[],
  mode: Mode,
  buffers: PlannedKernel['buffers'],
): PlannedKernel[] {
  const pm = x.choice.prefill;
  // One kernel per segment where the prefill choice or splitDecodeSegments says so (software adapters).
  const split = mode === 'prefill' ? pm.kind === 'mmv' && pm.splitSegments : x.choice.splitDecodeSegments;
  const list = split ? specs.flatMap((s) => s.segments.map((g) => ({ ...s, segments: [g] }))) : specs;
  return list.map((spec, i): PlannedKernel => {
    const { src, wgX, tile } = matmulSource(
      x.choice,
      list.length > 1 ? `${label}#${i}` : label,
      spec,
      mode,
      family,
      x.intDotFamilies,
    );
    return { family, src, wgX, tile, y: spec.lastTokenOnly ? 'one' : 'tiles', buffers };
  });
}

/**
 * Layer l's attention: flash-decoding + combine (decode; a small batch where {@link smallBatchFlash}), the
 * prefill kernel, else per (head, token).
 */
function planAttention(x: PlanContext, l: number, mode: Mode): PlannedKernel[] {
  const { cfg: c, s, codes } = x;
  const b = `blk.${l}`;
  const flash =
    mode === 'decode'
      ? { code: codes.flash(l), combine: codes.combine, wgX: codes.flashWorkgroups }
      : mode === 'small'
        ? { code: codes.flashSmall(l), combine: codes.combineSmall, wgX: codes.flashSmallWorkgroups }
        : undefined;
  const prefillCode = mode === 'decode' ? undefined : codes.prefill(l);
  if (flash?.code && flash.combine) {
    const flashBuffers = {
      step: s.step,
      q: s.q,
      kc: s.kCache[l],
      vc: s.vCache[l],
      out: s.xb,
      part_o: s.partO,
      part_ml: s.partMl,
    };
    const combineBuffers = { step: s.step, part_o: s.partO, part_ml: s.partMl, out: s.xb };
    return [
      fixed('attention', `${b}.attn.flash`, flash.code, flash.wgX, flashBuffers, 'chunks'),
      fixed(
        'attention',
        `${b}.attn.combine`,
        flash.combine,
        flashCombineWorkgroups({ nHead: c.nHead, headDim: c.headDim }),
        combineBuffers,
        'combine',
      ),
    ];
  }
  const buffers = { step: s.step, q: s.q, kc: s.kCache[l], vc: s.vCache[l], out: s.xb };
  if (mode !== 'decode' && prefillCode && codes.prefillAttn) {
    const { plan } = codes.prefillAttn;
    const wgX = c.nHeadKv * plan.groupsPerKvHead;
    return [
      {
        ...fixed('attention', `${b}.attn.prefill`, prefillCode, wgX, buffers, 'tiles'),
        tile: plan.tokensPerTile,
      },
    ];
  }
  return [fixed('attention', `${b}.attn`, codes.perToken(l), c.nHead, buffers)];
}

/**
 * Layer l's kernels in forward order, for decode (one token) or prefill (a batch). One line a step, as
 * llama2.c's `forward()` (shapes in ggml order, inner dimension first; T tokens):
 *
 *   xn = RMSNorm(x)                                        prefill's norm pass only (else fused below)
 *   q, k→kCache, v→vCache = RoPE(W_qkv · RMSNorm(x) + b)   one kernel: norm + Q/K/V matmuls + RoPE + KV store
 *                                                          (qwen3, Gemma 3: no RoPE yet, k → k_new; a
 *                                                          quantized K → k_new, a quantized V → v_new)
 *   q, k→kCache = RoPE(RMSNorm_head(q), RMSNorm_head(k))   qwen3, Gemma 3 only: per-head norms, then RoPE
 *   kCache, vCache ← Q8_0/Q4_0(k_new, v_new)               a quantized cache only: the rows as ggml blocks
 *   xb = softmax(q·Kᵀ/√hd) · V                             [T, nHead·hd], causal GQA over 0..pos; decode:
 *                                                          flash-decoding per chunk + combine (2 dispatches)
 *   x += W_o · xb                                          Gemma: x += RMSNorm(W_o · xb) (post-norm)
 *   xn = RMSNorm(x)                                        prefill's norm pass only
 *   hb = SiLU(W_gate · RMSNorm(x)) ⊙ (W_up · RMSNorm(x))   [T, nFF]; Gemma: GELU
 *   x += W_down · hb                                       Gemma: x += RMSNorm(W_down · hb)
 */
function planLayer(x: PlanContext, l: number, mode: Mode): PlannedKernel[] {
  const { cfg: c, s, W } = x;
  const b = `blk.${l}`;
  const gm = c.gemma;
  const sp = x.specs.layers[l];
  // Layer l's RoPE table (Gemma's SWA layers have their own).
  const rope = gm?.swa?.layers[l] && s.ropeSwa ? s.ropeSwa : s.rope;
  /**
   * Gemma's post-norm + residual add of `post` with norm weight `name` (none for other models), profiled
   * with the matmul before it.
   */
  const postNorm = (family: 'wo' | 'down', label: string, name: string): PlannedKernel[] =>
    x.postNormCode && s.post
      ? [fixed(family, label, x.postNormCode, 1, { step: s.step, y: s.post, w: vec(x, name), x: s.x })]
      : [];
  // Prefill's norm pass: the input RMSNorm written once into xn, the matmuls reading it without their own.
  const normRows = mode === 'prefill' ? x.normRowsCode : undefined;
  // The run state allocates xn exactly when usesNormPass holds (llama.ts normPass): a plan without it
  // would silently fall back to the fused norm while ModelInfo reports the pass.
  if (normRows && !s.xn) throw new Error('prefill norm pass planned without the run state buffer xn');
  const pass = normRows !== undefined;
  const normed = (family: 'qkv' | 'ffn', label: string, name: string): PlannedKernel[] => {
    if (!normRows) return [];
    const code = normRows(W(name).type);
    const buffers = { step: s.step, x: s.x, w: vec(x, name), xn: s.xn };
    return [{ ...fixed(family, label, code, 1, buffers, 'tiles'), tile: NORM_PASS_THREADS }];
  };
  const input = pass ? s.xn : s.x;
  const unnormed = (specs: MatmulSpec[]) => (pass ? specs.map((sp) => ({ ...sp, norm: undefined })) : specs);
  const qkNorm: PlannedKernel[] = x.qkNormCode
    ? [
        fixed('qkv', `${b}.qk_norm_rope`, x.qkNormCode, c.nHead + c.nHeadKv, {
          step: s.step,
          q: s.q,
          kc: isQuantKv(x.choice.kvType) ? undefined : s.kCache[l],
          k_new: s.kNew,
          qn: vec(x, `${b}.attn_q_norm.weight`),
          kn: vec(x, `${b}.attn_k_norm.weight`),
          rope,
        }),
      ]
    : [];
  // A quantized K or V: the rows the QKV (and head-norm) kernels left in k_new / v_new, quantized into the
  // cache (llama.cpp's set_rows into a Q8_0/Q4_0 cache).
  const kvQuant: PlannedKernel[] = x.kvQuant
    ? [
        fixed('qkv', `${b}.kv_quant`, x.kvQuant.code, x.kvQuant.wgX, {
          step: s.step,
          k_new: s.kNew,
          v_new: s.vNew,
          kc: s.kCache[l],
          vc: s.vCache[l],
        }),
      ]
    : [];
  const kQuant = isQuantKv(x.choice.kvType);
  const vQuant = isQuantKv(x.choice.vKvType ?? x.choice.kvType);
  return [
    ...normed('qkv', `${b}.attn_norm.prefill`, `${b}.attn_norm.weight`),
    ...matmuls(x, 'qkv', `${b}.qkv.${mode}`, unnormed(sp.qkv), mode, {
      step: s.step,
      x: input,
      gnorm: vec(x, `${b}.attn_norm.weight`),
      ...partsOf('attn_q', W(`${b}.attn_q.weight`)),
      ...partsOf('attn_k', W(`${b}.attn_k.weight`)),
      ...partsOf('attn_v', W(`${b}.attn_v.weight`)),
      rope,
      qkv_bias: x.qkvBias[l],
      q_out: s.q,
      k_cache: c.qkNorm || kQuant ? undefined : s.kCache[l],
      k_new: s.kNew,
      v_cache: vQuant ? undefined : s.vCache[l],
      v_new: s.vNew,
    }),
    ...qkNorm,
    ...kvQuant,
    ...planAttention(x, l, mode),
    ...matmuls(x, 'wo', `${b}.wo.${mode}`, sp.wo, mode, {
      step: s.step,
      x: s.xb,
      ...partsOf('attn_output', W(`${b}.attn_output.weight`)),
      residual: gm ? undefined : s.x,
      post: s.post,
    }),
    ...postNorm('wo', `${b}.post_attn_norm`, `${b}.post_attention_norm.weight`),
    ...normed('ffn', `${b}.ffn_norm.prefill`, `${b}.ffn_norm.weight`),
    ...matmuls(x, 'ffn', `${b}.ffn.${mode}`, unnormed(sp.ffn), mode, {
      step: s.step,
      x: input,
      gnorm: vec(x, `${b}.ffn_norm.weight`),
      ...partsOf('ffn_gate', W(`${b}.ffn_gate.weight`)),
      ...partsOf('ffn_up', W(`${b}.ffn_up.weight`)),
      hb: s.hb,
    }),
    ...matmuls(x, 'down', `${b}.down.${mode}`, sp.down, mode, {
      step: s.step,
      x: s.hb,
      ...partsOf('ffn_down', W(`${b}.ffn_down.weight`)),
      residual: gm ? undefined : s.x,
      post: s.post,
    }),
    ...postNorm('down', `${b}.post_ffw_norm`, `${b}.post_ffw_norm.weight`),
  ];
}

/** Every kernel of the forward pass ({@link planForward}). */
export interface ForwardPlan {
  embed: PlannedKernel;
  /** Each layer's kernels in forward order, for decode (one token). */
  decodeLayers: PlannedKernel[][];
  /** The same with the prefill (matrix × matrix) kernels. */
  prefillLayers: PlannedKernel[][];
  /**
   * The same for a small batch (the matrix × vector kernels at a few tokens per workgroup row, the prefill
   * attention), where the plan's `smallBatch` asks for them ({@link plansSmallBatch}); else empty.
   */
  smallLayers: PlannedKernel[][];
  /** The final norm + output matmul of the last token (more than one dispatch only past the binding limit). */
  output: PlannedKernel[];
  /** The argmax's two passes (kernels/argmax.ts: partial maxima over stripes, then the final one). */
  argmax: PlannedKernel[];
  /**
   * The GPU sampler's passes in dispatch order, each with its role (counted with the argmax: the
   * dispatches that turn logits into the token): [candidates, top_p_max, top_p_mass, top_p_compact, draw]
   * where planned; the candidates and top-p passes only past one stripe, the top-p passes not with
   * `sampleTopP` false.
   */
  sample: PlannedSamplePass[];
  /** The output kernel's buffers by binding name (for the every-token variant made on first use). */
  outBuffers: Record<string, GPUBuffer>;
  prefillAttn?: { layout: PrefillLayout | SgmatPrefillLayout; plan: PrefillAttentionPlan };
  flashWorkgroups: number;
  /** Workgroups per attention chunk of the small-batch flash kernel; 0 where small batches run the prefill attention. */
  flashSmallWorkgroups: number;
}

/**
 * Plans every kernel of the model (per layer: layers may mix weight types, as Q4_K_M files do), with the
 * buffers bound to its binding names.
 * @param weights the weights as the kernels bind them (weights.ts `fusedWeightViews`).
 * @param qkvBias per-layer Q/K/V bias buffers (qwen2), else empty.
 * @param intDotFamilies gets the matmul families whose prefill runs the integer-dot tile.
 * @throws EngineError('gguf_invalid') for a missing tensor.
 */
export function planForward(
  cfg: LlamaConfig,
  weights: Map<string, GpuWeight>,
  specs: ModelSpecs,
  s: RunState,
  choice: ForwardConfig,
  qkvBias: (GPUBuffer | undefined)[],
  intDotFamilies: Set<MatmulFamilyName>,
): ForwardPlan {
  const c = cfg;
  const W = (name: string) => requireWeight(weights, name);
  const gm = c.gemma;
  const x: PlanContext = {
    cfg,
    s,
    choice,
    specs,
    codes: attentionCodes(c, choice),
    intDotFamilies,
    qkvBias,
    W,
    qkNormCode: c.qkNorm
      ? qkNormRopeWGSL({
          nHead: c.nHead,
          nHeadKv: c.nHeadKv,
          headDim: c.headDim,
          ropeDim: c.ropeDim,
          neox: c.ropeType === 'neox',
          eps: c.rmsEps,
          normType: W('blk.0.attn_q_norm.weight').type,
          kvType: choice.kvType,
        })
      : undefined,
    kvQuant: kvQuantPlan(c, choice),
    postNormCode: gm
      ? rmsNormAddWGSL({ n: c.nEmbd, eps: c.rmsEps, normType: W('blk.0.post_attention_norm.weight').type })
      : undefined,
    normRowsCode: usesNormPass(choice.prefill, c)
      ? (normType) => rmsNormRowsWGSL({ n: c.nEmbd, eps: c.rmsEps, normType, threads: NORM_PASS_THREADS })
      : undefined,
  };
  const layers = Array.from({ length: c.nLayers }, (_, l) => l);
  const decodeLayers = layers.map((l) => planLayer(x, l, 'decode'));
  const prefillLayers = layers.map((l) => planLayer(x, l, 'prefill'));
  const smallLayers = plansSmallBatch(choice) ? layers.map((l) => planLayer(x, l, 'small')) : [];
  const outW = weights.get('output.weight') ?? W('token_embd.weight');
  const emb = W('token_embd.weight');
  const outBuffers = {
    step: s.step,
    x: s.x,
    gnorm: vec(x, 'output_norm.weight'),
    ...partsOf('output', outW),
    logits: s.logits,
  };
  const embedCode = embedWGSL({
    nEmbd: c.nEmbd,
    parts: emb.parts.map((p) => ({ type: emb.type, rowStart: p.rowStart, rowCount: p.rowCount })),
    ...(gm ? { scale: gm.embdScale } : {}),
  });
  const embedBuffers = {
    step: s.step,
    ids: s.ids,
    x: s.x,
    ...Object.fromEntries(emb.parts.map((p, i) => [`e${i}`, p.buffer])),
  };
  const argmax = argmaxKernels({ nVocab: c.nVocab });
  return {
    embed: fixed('embed', 'embed', embedCode, Math.ceil(c.nEmbd / WG), embedBuffers),
    decodeLayers,
    prefillLayers,
    smallLayers,
    output: matmuls(x, 'output', 'output', specs.out, 'decode', outBuffers),
    argmax: [
      fixed(
        'argmax',
        'argmax',
        argmax.partials,
        argmax.nParts,
        { logits: s.logits, partials: s.argmaxPartials },
        'one',
      ),
      fixed(
        'argmax',
        'argmax_final',
        argmax.final,
        1,
        { partials: s.argmaxPartials, out: s.tokenOut },
        'one',
      ),
    ],
    // The passes samplePassPlan lists (no top-p passes on software adapters: KernelPlan.sampleTopP).
    sample: samplePassPlan(c.nVocab, choice.sampleTopP !== false).map(({ role, workgroups }) => {
      const o = { nVocab: c.nVocab, ring: choice.nCtx };
      const k =
        role === 'draw'
          ? fixed(
              'argmax',
              'sample',
              sampleWGSL(o),
              workgroups,
              { ...s.sample, logits: s.logits, out: s.tokenOut },
              'one',
            )
          : fixed(
              'argmax',
              `sample_${role}`,
              role === 'candidates'
                ? sampleCandidatesWGSL(o)
                : sampleTopPWGSL(o, role.slice('top_p_'.length) as SampleTopPPass),
              workgroups,
              { ...s.sample, logits: s.logits },
              'one',
            );
      return { role, ...k };
    }),
    outBuffers,
    prefillAttn: x.codes.prefillAttn,
    flashWorkgroups: x.codes.flashWorkgroups,
    flashSmallWorkgroups: x.codes.flashSmallWorkgroups,
  };
}
