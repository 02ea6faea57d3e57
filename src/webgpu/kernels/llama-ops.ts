/**
 * The fused matmuls of a llama block, as {@link MatmulOptions} without TT (any matmul variant builds them:
 * decode's mmv / gemv / rows, prefill's tiled kernel). Every WGSL epilogue of the forward pass lives here:
 *
 *   qkvRopeMatmul   q, k→k_cache, v→v_cache = RoPE(W_qkv · RMSNorm(x) [+ bias])   llama.cpp llm_build_llama
 *   residualMatmul  residual += W · x                                            attn_output, ffn_down
 *   swigluMatmul    hb = SiLU(W_gate · RMSNorm(x)) ⊙ (W_up · RMSNorm(x))           ggml_swiglu
 *   logitsMatmul    logits = W_out · RMSNorm(x)                                  last token or every one
 *
 * A weight may be split by rows across several bindings ({@link WeightParts}); each part becomes a
 * segment of its own, so any matrix larger than one binding still runs in the same dispatch. Binding
 * names: `step`, `x` (the input), `gnorm` (the norm weight), `w_<role>` and `w_<role>_<i>` for part i ≥ 1,
 * then the outputs named in each function's docstring.
 */
import type { KvType } from '../../core/types.ts';
import { f32Lit, type WeightType } from './common.ts';
import { isQuantKv } from './kv-quant.ts';
import type { MatmulOptions, MatmulSegment, SegmentWeight } from './matmul.ts';

/** A matmul's options without the tokens per thread (chosen per variant). */
export type MatmulSpec = Omit<MatmulOptions, 'TT'>;

/** A weight as the kernels see it: its type and its parts' rows (GPU-free: no buffers). */
export interface WeightParts {
  type: WeightType;
  /** Row ranges of the parts; `planar` = the part's block count where repacked (kernels/repack.ts). */
  parts: readonly { rowStart: number; rowCount: number; planar?: number }[];
}

/** The binding name of part `i` of the weight bound as `role` (`w_attn_q`, `w_attn_q_1`, …). */
export function partBinding(role: string, i: number): string {
  return i === 0 ? `w_${role}` : `w_${role}_${i}`;
}

function segWeight(role: string, w: WeightParts, i: number): SegmentWeight {
  return {
    type: w.type,
    planar: w.parts[i].planar,
    binding: partBinding(role, i),
    rowStart: w.parts[i].rowStart,
  };
}

/** Shape of {@link qkvRopeMatmul}. */
export interface QkvRopeShape {
  nEmbd: number;
  nHead: number;
  nHeadKv: number;
  headDim: number;
  /** Rotated dims per head (≤ headDim; the rest pass through). */
  ropeDim: number;
  /** NeoX pairs (i, i + ropeDim/2) instead of adjacent pairs (2i, 2i + 1) (llama.cpp LLAMA_ROPE_TYPE_NEOX). */
  neox: boolean;
  norm: { eps: number; type: WeightType };
  /** Add the Q/K/V biases (qwen2), bound as one F32 `qkv_bias` [qDim + 2·kvDim]. */
  bias: boolean;
  /**
   * Store Q and K unrotated, K into `k_new` [T, kvDim] f32 instead of the cache (qwen3: per-head norms
   * come first, then kernels/headnorm.ts rotates and stores K).
   */
  deferRope: boolean;
  /** KV-cache element type (default f32; f16 is stored two per u32 with pack2x16float): K's, and V's unless {@link vKvType}. */
  kvType?: KvType;
  /**
   * V-cache element type where it differs (default kvType). A quantized K or V (Q8_0, Q4_0) is not stored
   * here: K (after RoPE, heads in natural order, as are Q's) goes to `k_new` [T, kvDim] f32 and V to
   * `v_new` [T, kvDim] f32, for kernels/kv-quant.ts to quantize into the cache.
   */
  vKvType?: KvType;
}

/**
 * The head dimension stored in each slot of a Q row or K-cache row of one head: rotated pair i (dims ia,
 * ib of llama.cpp's RoPE: (2i, 2i + 1), or with NeoX (i, i + ropeDim/2) while 2i < ropeDim) sits in the
 * adjacent slots (2i, 2i + 1), so an f16 cache stores each pair in one u32. Q and K share the order, so
 * q·k is unchanged; V keeps the natural order. Identity for non-NeoX RoPE.
 * @returns dims [headDim]: dims[slot] = head dimension.
 */
export function headSlotDims(headDim: number, ropeDim: number, neox: boolean): number[] {
  const dims: number[] = [];
  for (let i = 0; i < headDim / 2; i++) {
    const rotatedNeox = neox && 2 * i < ropeDim;
    dims.push(rotatedNeox ? i : 2 * i, rotatedNeox ? i + ropeDim / 2 : 2 * i + 1);
  }
  return dims;
}

/**
 * Fused RMSNorm + Q/K/V projections + bias + RoPE + KV-cache store. Input x [T, nEmbd]; weights attn_q
 * [nEmbd, qDim], attn_k/attn_v [nEmbd, kvDim] (ggml order); outputs `q_out` [T, qDim] and rows pos of
 * `k_cache`/`v_cache` [nCtx, kvDim] (f32, or f16 pairs in u32). Q and K heads are stored in the slot
 * order of {@link headSlotDims}. RoPE as llama.cpp's ggml_rope_ext, from the table `rope`
 * [nCtx, ropeDim/2] of (cos, sin). Each unit computes one rotated pair of rows, so parts of Q and K
 * must hold whole heads.
 * @throws Error when a part of attn_q/attn_k does not start and end on a head boundary.
 */
export function qkvRopeMatmul(o: QkvRopeShape, q: WeightParts, k: WeightParts, v: WeightParts): MatmulSpec {
  const HD = o.headDim;
  const half = HD / 2;
  const RD = o.ropeDim;
  const qDim = o.nHead * HD;
  const kvDim = o.nHeadKv * HD;
  const f16 = o.kvType === 'f16';
  const vType = o.vKvType ?? o.kvType;
  const fv16 = vType === 'f16';
  // A quantized K is stored by the quantizer from k_new (after RoPE unless deferred), Q and K heads in
  // their natural order so its blocks hold the values llama.cpp's do; a quantized V from v_new.
  const kQuant = isQuantKv(o.kvType ?? 'f32');
  const vQuant = isQuantKv(vType ?? 'f32');
  // Pair (ia, ib) of head-local dims rotated together; pairs past ropeDim are not rotated.
  const ia = o.neox
    ? `select(2u * (u % ${half}u), u % ${half}u, 2u * (u % ${half}u) < ${RD}u)`
    : `2u * (u % ${half}u)`;
  const ib = o.neox
    ? `select(2u * (u % ${half}u) + 1u, u % ${half}u + ${RD / 2}u, 2u * (u % ${half}u) < ${RD}u)`
    : `2u * (u % ${half}u) + 1u`;
  const ropeDecl = o.deferRope ? [] : ['var<storage, read> rope: array<vec2<f32>>'];
  const biasDecl = o.bias ? ['var<storage, read> qkv_bias: array<f32>'] : [];
  // Biases: Q's, then K's, then V's in one buffer (adapters allow as few as 8 storage buffers per stage).
  const biasAdd = (base: number, r0: string, r1: string) =>
    o.bias
      ? `let b0 = qkv_bias[${base}u + ${r0}]; let b1 = qkv_bias[${base}u + ${r1}];`
      : 'let b0 = 0.0; let b1 = 0.0;';
  /** Epilogue statements leaving the (rotated) pair in o0, o1 at head-local dims ia, ib of head row hb0. */
  const rot = (
    biasBase: number,
    rowStart: number,
  ) => `let i = u % ${half}u; let hb0 = ${rowStart}u + (u / ${half}u) * ${HD}u; let ia = ${ia}; let ib = ${ib};
      ${biasAdd(biasBase, 'hb0 + ia', 'hb0 + ib')}
      var o0 = d0 + b0; var o1 = d1 + b1;${
        o.deferRope
          ? ''
          : `
      if (2u * i < ${RD}u) { let cs = rope[pos * ${RD / 2}u + i]; o0 = (d0 + b0) * cs.x - (d1 + b1) * cs.y; o1 = (d0 + b0) * cs.y + (d1 + b1) * cs.x; }`
      }`;
  const pairDots = [
    { w: 0, row: `(u / ${half}u) * ${HD}u + ${ia}` },
    { w: 0, row: `(u / ${half}u) * ${HD}u + ${ib}` },
  ];
  const rotated = (
    role: string,
    w: WeightParts,
    biasBase: number,
    out: string,
    stride: number,
    row: string,
  ) =>
    w.parts.map((p, i): MatmulSegment => {
      if (p.rowStart % HD !== 0 || p.rowCount % HD !== 0) {
        throw new Error(`${role} part ${i} (rows ${p.rowStart}+${p.rowCount}) does not hold whole heads`);
      }
      // Pair i of the head goes to slots (2i, 2i + 1) (headSlotDims): one u32 of an f16 cache.
      const packed = f16 && out === 'k_cache';
      return {
        nUnits: p.rowCount / 2,
        weights: [segWeight(role, w, i)],
        dots: pairDots,
        epilogue: `${rot(biasBase, p.rowStart)}
      ${
        packed
          ? `${out}[(${row} * ${stride}u + hb0) / 2u + i] = pack2x16float(vec2<f32>(o0, o1));`
          : kQuant
            ? `${out}[${row} * ${stride}u + hb0 + ia] = o0; ${out}[${row} * ${stride}u + hb0 + ib] = o1;`
            : `${out}[${row} * ${stride}u + hb0 + 2u * i] = o0; ${out}[${row} * ${stride}u + hb0 + 2u * i + 1u] = o1;`
      }`,
        extra: [
          ...ropeDecl,
          ...biasDecl,
          `var<storage, read_write> ${out}: array<${packed ? 'u32' : 'f32'}>`,
        ],
      };
    });
  const vSegs = v.parts.map((p, i): MatmulSegment => {
    if (p.rowCount % 2 !== 0) throw new Error(`attn_v part ${i} has an odd row count (${p.rowCount})`);
    const r = (e: string) => `${p.rowStart}u + ${e}`;
    return {
      nUnits: p.rowCount / 2,
      weights: [segWeight('attn_v', v, i)],
      dots: [
        { w: 0, row: '2u * u' },
        { w: 0, row: '2u * u + 1u' },
      ],
      epilogue: `${biasAdd(qDim + kvDim, r('2u * u'), r('2u * u + 1u'))}
      ${
        vQuant
          ? `v_new[t * ${kvDim}u + ${r('2u * u')}] = d0 + b0; v_new[t * ${kvDim}u + ${r('2u * u + 1u')}] = d1 + b1;`
          : fv16
            ? `v_cache[(pos * ${kvDim}u + ${r('2u * u')}) / 2u] = pack2x16float(vec2<f32>(d0 + b0, d1 + b1));`
            : `v_cache[pos * ${kvDim}u + ${r('2u * u')}] = d0 + b0; v_cache[pos * ${kvDim}u + ${r('2u * u + 1u')}] = d1 + b1;`
      }`,
      extra: [
        ...biasDecl,
        vQuant
          ? 'var<storage, read_write> v_new: array<f32>'
          : `var<storage, read_write> v_cache: array<${fv16 ? 'u32' : 'f32'}>`,
      ],
    };
  });
  return {
    K: o.nEmbd,
    norm: o.norm,
    segments: [
      ...rotated('attn_q', q, 0, 'q_out', qDim, 't'),
      // Deferred RoPE (qwen3): K goes unrotated to the f32 scratch k_new [T, kvDim]; the head-norm kernel
      // normalises, rotates and stores it in the cache (rounded once, as llama.cpp). A quantized K goes to
      // k_new too (rotated unless deferred), for the quantizer.
      ...(o.deferRope || kQuant
        ? rotated('attn_k', k, qDim, 'k_new', kvDim, 't')
        : rotated('attn_k', k, qDim, 'k_cache', kvDim, 'pos')),
      ...vSegs,
    ],
  };
}

/**
 * residual [T, N] += W · x, x [T, K], W [K, N] bound as `w_<role>` (attn_output, ffn_down: the residual
 * connections of llm_build_llama). Output binding `residual`.
 */
export function residualMatmul(K: number, role: string, w: WeightParts, N: number): MatmulSpec {
  return {
    K,
    extra: ['var<storage, read_write> residual: array<f32>'],
    segments: w.parts.map((p, i) => ({
      nUnits: p.rowCount,
      weights: [segWeight(role, w, i)],
      dots: [{ w: 0, row: 'u' }],
      epilogue: `residual[t * ${N}u + ${p.rowStart}u + u] += d0;`,
    })),
  };
}

/**
 * out [T, N] = W · x (plain store), x [T, K], W [K, N] bound as `w_<role>`; output binding `out` (Gemma's
 * attn_output and ffn_down, whose results are RMS-normed before the residual add: kernels/postnorm.ts).
 */
export function storeMatmul(K: number, role: string, w: WeightParts, N: number, out: string): MatmulSpec {
  return {
    K,
    extra: [`var<storage, read_write> ${out}: array<f32>`],
    segments: w.parts.map((p, i) => ({
      nUnits: p.rowCount,
      weights: [segWeight(role, w, i)],
      dots: [{ w: 0, row: 'u' }],
      epilogue: `${out}[t * ${N}u + ${p.rowStart}u + u] = d0;`,
    })),
  };
}

/**
 * WGSL tanh of an f32 expression with its argument clamped to ±15 (tanh is ±1 in f32 there), so an
 * exp-based tanh cannot overflow to inf/inf.
 */
function tanhClamped(e: string): string {
  return `tanh(clamp(${e}, -15.0, 15.0))`;
}

/**
 * hb [T, nFF] = SiLU(gate) ⊙ up with gate = W_gate · RMSNorm(x), up = W_up · RMSNorm(x) (ggml_swiglu;
 * SiLU(a) = a / (1 + e^−a)), or with `act` 'gelu' GELU(gate) ⊙ up (ggml_geglu, Gemma's LLM_FFN_GELU +
 * LLM_FFN_PAR; the tanh form of ggml_gelu_f32: 0.5·a·(1 + tanh(√(2/π)·a·(1 + 0.044715·a²)))). Weights
 * ffn_gate, ffn_up [K, nFF]. Output binding `hb`.
 * @throws Error when gate and up are not split at the same rows.
 */
export function swigluMatmul(
  K: number,
  nFF: number,
  norm: { eps: number; type: WeightType },
  gate: WeightParts,
  up: WeightParts,
  act: 'silu' | 'gelu' = 'silu',
): MatmulSpec {
  const same =
    gate.parts.length === up.parts.length &&
    gate.parts.every((p, i) => p.rowStart === up.parts[i].rowStart && p.rowCount === up.parts[i].rowCount);
  if (!same) throw new Error('ffn_gate and ffn_up must be split at the same rows');
  return {
    K,
    norm,
    extra: ['var<storage, read_write> hb: array<f32>'],
    segments: gate.parts.map((p, i) => ({
      nUnits: p.rowCount,
      weights: [segWeight('ffn_gate', gate, i), segWeight('ffn_up', up, i)],
      dots: [
        { w: 0, row: 'u' },
        { w: 1, row: 'u' },
      ],
      epilogue:
        act === 'gelu'
          ? `let r = ${p.rowStart}u + u; hb[t * ${nFF}u + r] = 0.5 * d0 * (1.0 + ${tanhClamped('0.7978845608028654 * d0 * (1.0 + 0.044715 * d0 * d0)')}) * d1;`
          : `let r = ${p.rowStart}u + u; hb[t * ${nFF}u + r] = d0 / (1.0 + exp(-d0)) * d1;`,
    })),
  };
}

/**
 * logits = W_out · RMSNorm(x): of the batch's last token into `logits` [nVocab] (decode and prefill), or
 * with `everyToken` of each token t into `logits` [T, nVocab] (teacher-forced scoring). W_out
 * [K, nVocab] bound as `w_output` (token_embd where the embeddings are tied). With `softcap` > 0:
 * cap · tanh(logits / cap) (Gemma's final_logit_softcapping, src/models/gemma2.cpp).
 */
export function logitsMatmul(
  K: number,
  nVocab: number,
  norm: { eps: number; type: WeightType },
  w: WeightParts,
  everyToken = false,
  softcap = 0,
): MatmulSpec {
  return {
    K,
    norm,
    lastTokenOnly: !everyToken,
    extra: ['var<storage, read_write> logits: array<f32>'],
    segments: w.parts.map((p, i) => ({
      nUnits: p.rowCount,
      weights: [segWeight('output', w, i)],
      dots: [{ w: 0, row: 'u' }],
      epilogue: `logits[${everyToken ? `t * ${nVocab}u + ` : ''}${p.rowStart}u + u] = ${
        softcap > 0 ? `${f32Lit(softcap)} * ${tanhClamped(`d0 / ${f32Lit(softcap)}`)}` : 'd0'
      };`,
    })),
  };
}
