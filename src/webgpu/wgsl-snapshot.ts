/**
 * The WGSL of every kernel a load would compile, without a GPU: the same planning as `LlamaModel.load`
 * (weights.ts `planWeights` / `layerSpecs`, forward.ts `planForward`) over stand-in buffers, with the
 * kernel plan an adapter profile gets (kernel-plan.ts `resolveKernelPlan`, the engine's own path). `npm run wgsl`
 * prints any of these kernels, and `wgsl-snapshot.test.ts` keeps the golden kernels in tests/wgsl/ and a
 * fingerprint of every planned kernel of the test models, so a refactor shows as no diff and a kernel
 * change as a WGSL diff.
 *
 * Trials are not run: a profile's mmv layout is one of the adapter's candidates (tune.ts `mmvCandidates`),
 * named in the variant, and the GPU's prefill tile is given (float or integer dot).
 */
import type { KvType } from '../core/types.ts';
import type { GgufFile } from '../gguf/types.ts';
import { type LlamaConfig, llamaConfigFromGguf } from '../model/config.ts';
import type { GpuContext } from './device.ts';
import {
  type KernelOverrides,
  layerMatmulWeights,
  PREFILL_LIGHT_BELOW,
  prefillMatmulFor,
  resolveKernelPlan,
} from './kernel-plan.ts';
import { sgmatAttentionProblem } from './kernels/attention-sgmat.ts';
import { WEIGHT_TYPES } from './kernels/common.ts';
import type { MmvLayout } from './kernels/mmv.ts';
import { layoutName, mmvCandidates } from './kernels/tune.ts';
import {
  type ForwardConfig,
  matmulSource,
  type PlannedKernel,
  planForward,
  usesNormPass,
} from './model/forward.ts';
import type { MatmulFamilyName, PrefillMatmul } from './model/options.ts';
import { allocRunState } from './model/state.ts';
import { syntheticGguf } from './model/synthetic.ts';
import { fusedWeightViews, type GpuWeight, layerSpecs, planWeights } from './model/weights.ts';

/** An adapter as the kernel defaults see it (no device). */
export interface AdapterProfile {
  id: string;
  isFallback: boolean;
  /** Subgroup sizes [min, max], or none. */
  subgroups?: [number, number];
  /** WGSL's packed_4x8_integer_dot_product. */
  packed: boolean;
  /** maxStorageBuffersPerShaderStage. */
  maxStorage: number;
}

/** The adapters the snapshots cover: SwiftShader as Chromium and Dawn report it, and two GPUs. */
export const ADAPTER_PROFILES: readonly AdapterProfile[] = [
  { id: 'swiftshader', isFallback: true, subgroups: [4, 4], packed: true, maxStorage: 10 },
  { id: 'gpu', isFallback: false, subgroups: [32, 32], packed: true, maxStorage: 10 },
  { id: 'gpu-basic', isFallback: false, packed: false, maxStorage: 8 },
];

/** A stand-in GpuContext for the kernel defaults (they read info, subgroups and WGSL features only). */
export function profileContext(p: AdapterProfile): GpuContext {
  return {
    info: { vendor: p.id, architecture: '', device: '', description: '', isFallback: p.isFallback },
    hasF16: false,
    hasSubgroups: p.subgroups !== undefined,
    hasTimestamps: false,
    subgroupMinSize: p.subgroups?.[0] ?? 0,
    subgroupMaxSize: p.subgroups?.[1] ?? 0,
    wgslFeatures: new Set(p.packed ? ['packed_4x8_integer_dot_product'] : []),
    defaultLimits: false,
  } as unknown as GpuContext;
}

/** One set of kernel overrides on a profile: one mmv candidate (or mmv off), one prefill, planes or not. */
export interface PlanVariant {
  /** e.g. `swiftshader/lanes1-u8-t8-packed-xs4/heavy`, `gpu/mmv-off/tile-int8/raw`. */
  id: string;
  gpu: GpuContext;
  overrides: KernelOverrides;
  maxStorage: number;
}

/**
 * The kernel overrides that stand in for `profile`'s trials, for `cfg`: once per mmv candidate of the
 * adapter (tune.ts `mmvCandidates`) and with mmv off; prefill as the adapter would choose (software: the
 * light and the heavy mmv tiles, kernel-plan.ts `prefillMatmulFor`; GPUs: the float and the integer-dot
 * tile); each also with `repack: false` (`/raw`), ggml's blocks as the file has them. Everything else is
 * the adapter's default (kernel-plan.ts `adapterDefaults`). On a GPU profile with subgroups of 32, one more
 * (`…/tile/sgmat-attn`): the prefill attention on subgroup matrices at 16x16x16 where `cfg`'s head size
 * takes it.
 */
export function planVariants(profile: AdapterProfile, _cfg?: LlamaConfig): PlanVariant[] {
  const gpu = profileContext(profile);
  const prefills: [string, PrefillMatmul][] = profile.isFallback
    ? [
        ['light', prefillMatmulFor(gpu, 0)],
        ['heavy', prefillMatmulFor(gpu, undefined)],
      ]
    : [
        ['tile', { kind: 'tile', intDot: false }],
        ...(profile.packed ? [['tile-int8', { kind: 'tile', intDot: true }] as [string, PrefillMatmul]] : []),
      ];
  const layouts: [string, MmvLayout | 'off'][] = [
    ...mmvCandidates(gpu).map((l): [string, MmvLayout] => [layoutName(l), l]),
    ['mmv-off', 'off'],
  ];
  const out: PlanVariant[] = [];
  for (const [lname, mmvLayout] of layouts) {
    for (const [pname0, prefill] of prefills) {
      for (const repack of [true, false]) {
        const id = `${profile.id}/${lname}/${repack ? pname0 : `${pname0}/raw`}`;
        out.push({ id, gpu, maxStorage: profile.maxStorage, overrides: { mmvLayout, prefill, repack } });
      }
    }
  }
  // The prefill attention on subgroup matrices (kernels/attention-sgmat.ts) as a load that asked for it
  // and passed its self-test on NVIDIA's 16x16x16 with subgroups of 32 gets it: the first layout's tile
  // variant with it, where the model's head size takes it.
  const sg = profile.subgroups?.[1];
  const tile = { M: 16, N: 16, K: 16, subgroupSize: 32 } as const;
  if (!profile.isFallback && sg === 32 && _cfg && !sgmatAttentionProblem(_cfg, tile)) {
    const first = out.find((v) => v.id.endsWith('/tile'));
    if (first)
      out.push({
        ...first,
        id: `${first.id}/sgmat-attn`,
        overrides: { ...first.overrides, attention: { prefill: { kind: 'sgmat', tile, kvTile: 32 } } },
      });
  }
  return out;
}

/**
 * A profile's variant without trials: the adapter's first mmv candidate (at load a timed trial picks
 * among the candidates; `ModelInfo.kernels` says which) and the prefill the adapter gets for `cfg`
 * (software: the light tiles below kernel-plan.ts `PREFILL_LIGHT_BELOW` matmul weights per token, else the
 * heavy ones; GPUs: the float tile, which the trial may swap for the integer-dot one).
 */
export function defaultVariant(profile: AdapterProfile, cfg: LlamaConfig): PlanVariant {
  const all = planVariants(profile, cfg);
  const prefill = profile.isFallback
    ? layerMatmulWeights(cfg) < PREFILL_LIGHT_BELOW
      ? '/light'
      : '/heavy'
    : '/tile';
  return all.find((v) => v.id.endsWith(prefill)) ?? all[0];
}

/** One planned kernel's WGSL and where it runs. */
export interface SnapshotKernel {
  /** The shader label (e.g. `blk.3.ffn.decode`, `output`, `argmax`). */
  label: string;
  code: string;
}

const STANDIN_USAGE = {
  MAP_READ: 1,
  MAP_WRITE: 2,
  COPY_SRC: 4,
  COPY_DST: 8,
  INDEX: 16,
  VERTEX: 32,
  UNIFORM: 64,
  STORAGE: 128,
  INDIRECT: 256,
  QUERY_RESOLVE: 512,
};

/**
 * Every kernel a load of `file` with `variant` plans, in dispatch order (embed, each layer's decode
 * kernels, each layer's prefill kernels, output, argmax, sampler, the every-token output), labels
 * as the pipelines get them. Buffers are stand-ins: only the WGSL is real.
 * @throws what planning throws for the file (EngineError 'unsupported_model', 'gguf_invalid').
 */
export async function plannedKernels(
  file: GgufFile,
  cfg: LlamaConfig,
  variant: PlanVariant,
  kvType: KvType = 'f16',
  nCtx = 256,
  vKvType: KvType = kvType,
): Promise<SnapshotKernel[]> {
  const g = globalThis as { GPUBufferUsage?: unknown };
  g.GPUBufferUsage ??= STANDIN_USAGE;
  // Every choice is forced, so no trial runs and nothing touches the stand-in adapter's device.
  const plan = await resolveKernelPlan(variant.gpu, file, cfg, variant.overrides);
  const choice: ForwardConfig = { ...plan, kvType, ...(vKvType !== kvType ? { vKvType } : {}), nCtx };
  const inf = Number.POSITIVE_INFINITY;
  const plans = planWeights(file, cfg, inf, inf, plan.repack);
  const views = fusedWeightViews(plans, cfg);
  const specs = layerSpecs(cfg, views, variant.maxStorage, kvType, vKvType);
  const standin = (label: string) => ({ label }) as unknown as GPUBuffer;
  const weights = new Map<string, GpuWeight>(
    [...views].map(([n, w]) => [n, { ...w, parts: w.parts.map((p) => ({ ...p, buffer: standin(n) })) }]),
  );
  const s = allocRunState(
    cfg,
    {
      nCtx: choice.nCtx,
      batchSize: 16,
      kvType,
      vKvType,
      normPass: usesNormPass(choice.prefill, cfg),
    },
    (label) => standin(label),
  );
  const bias = cfg.qkvBias ? cfg.nLayers : 0;
  const qkvBias = Array.from({ length: bias }, (_, l) => standin(`blk.${l}.qkv_bias`));
  const intDot = new Set<MatmulFamilyName>();
  const fwd = planForward(cfg, weights, specs, s, choice, qkvBias, intDot);
  const outAll: PlannedKernel[] = specs.outAll.map((spec, i) => {
    const { src, wgX, tile } = matmulSource(choice, `output_all#${i}`, spec, 'prefill', 'output', intDot);
    return { family: 'output', src, wgX, tile, y: 'tiles', buffers: {} };
  });
  const all = [
    fwd.embed,
    ...fwd.decodeLayers.flat(),
    ...fwd.prefillLayers.flat(),
    ...fwd.output,
    ...fwd.argmax,
    ...fwd.sample,
    ...outAll,
  ];
  return all.map((k) => ({ label: k.src.label, code: k.src.code }));
}

/**
 * The models the fingerprint covers: every architecture and every weight type the engine runs, at the
 * smallest shapes that have them (names as `synthetic:SHAPE-FTYPE`).
 */
export const SNAPSHOT_MODELS: readonly string[] = [
  'synthetic:stories260k-f32',
  'synthetic:stories260k-f16',
  'synthetic:stories260k-q8_0',
  'synthetic:stories15m-q4_0',
  'synthetic:stories15m-q4_1',
  'synthetic:stories15m-q5_1',
  'synthetic:stories15m-iq4_nl',
  'synthetic:bench-60m-q4_k_m',
  'synthetic:bench-60m-q2_k',
  'synthetic:bench-60m-q3_k_m',
  'synthetic:bench-60m-q5_k_m',
  'synthetic:bench-60m-q6_k',
  'synthetic:bench-60m-iq4_xs',
  'synthetic:qwen2.5-0.5b-q4_k_m',
  'synthetic:gemma-3-1b-q4_0',
  'synthetic:gemma-2-2b-q8_0',
  'synthetic:phi-4-mini-q4_k_m',
  'synthetic:llama-3.2-1b-q4_k_m',
];

/** A synthetic model's header (no tokenizer) and its config. */
export function snapshotModel(name: string): { file: GgufFile; cfg: LlamaConfig } {
  const file = syntheticGguf(name, 1, { tokenizer: false });
  return { file, cfg: llamaConfigFromGguf(file, { supportedTypes: WEIGHT_TYPES }) };
}

/**
 * Kernels whose WGSL is kept in tests/wgsl/NAME.wgsl: name → `[model, variant, label]`, or
 * `[model, variant, label, kv]` for a load with that KV cache ({@link parseKvSpec}: `q8_0`, `q8_0/q4_0`;
 * default f16): the quantize-on-write kernel and the attention kernels reading Q8_0/Q4_0 blocks.
 */
export const GOLDEN_KERNELS: Readonly<Record<string, readonly [string, string, string, string?]>> = {
  'mmv-q4_k-planar': ['synthetic:bench-60m-q4_k_m', 'gpu/lanes32-sg-u2-t128-packed/tile', 'blk.0.ffn.decode'],
  'mmv-int8-q4_k-planar': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed-int8/tile',
    'blk.0.ffn.decode',
  ],
  'mmv-software-q4_k-planar': [
    'synthetic:bench-60m-q4_k_m',
    'swiftshader/lanes1-u8-t8-packed-xs4/heavy',
    'blk.0.ffn.decode',
  ],
  'qkv-rope-decode-q4_k': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed/tile',
    'blk.0.qkv.decode',
  ],
  'output-q6_k': ['synthetic:bench-60m-q4_k_m', 'gpu/lanes32-sg-u2-t128-packed/tile', 'output'],
  'prefill-mmv-tile-q4_k': [
    'synthetic:bench-60m-q4_k_m',
    'swiftshader/lanes1-u8-t8-packed-xs4/heavy',
    'blk.0.ffn.prefill',
  ],
  'prefill-mmm-tile-q4_k': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed/tile',
    'blk.0.ffn.prefill',
  ],
  'prefill-mmm-int8-q4_0': [
    'synthetic:stories15m-q4_0',
    'gpu/lanes32-sg-u2-t128-packed/tile-int8',
    'blk.0.ffn.prefill',
  ],
  'flash-decode-tiled': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed/tile',
    'blk.0.attn.flash',
  ],
  'flash-decode-strided': [
    'synthetic:bench-60m-q4_k_m',
    'swiftshader/lanes1-u8-t8-packed-xs4/heavy',
    'blk.0.attn.flash',
  ],
  'flash-combine': ['synthetic:bench-60m-q4_k_m', 'gpu/lanes32-sg-u2-t128-packed/tile', 'blk.0.attn.combine'],
  'prefill-attention-tiled': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed/tile',
    'blk.0.attn.prefill',
  ],
  'prefill-attention-sgmat': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u1-t256-packed/tile/sgmat-attn',
    'blk.0.attn.prefill',
  ],
  'prefill-attention-rows': [
    'synthetic:bench-60m-q4_k_m',
    'swiftshader/lanes1-u8-t8-packed-xs4/heavy',
    'blk.0.attn.prefill',
  ],
  'norm-pass': [
    'synthetic:bench-60m-q4_k_m',
    'swiftshader/lanes1-u8-t8-packed-xs4/heavy',
    'blk.0.attn_norm.prefill',
  ],
  'kv-quant-q8_0': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed/tile',
    'blk.0.kv_quant',
    'q8_0',
  ],
  'kv-quant-q8_0-q4_0': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed/tile',
    'blk.0.kv_quant',
    'q8_0/q4_0',
  ],
  'qkv-rope-decode-q4_k-kv-q8_0': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed/tile',
    'blk.0.qkv.decode',
    'q8_0',
  ],
  'flash-decode-tiled-q8_0': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed/tile',
    'blk.0.attn.flash',
    'q8_0',
  ],
  'flash-decode-strided-q4_0': [
    'synthetic:bench-60m-q4_k_m',
    'swiftshader/lanes1-u8-t8-packed-xs4/heavy',
    'blk.0.attn.flash',
    'q4_0',
  ],
  'flash-decode-tiled-q8_0-q4_0': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed/tile',
    'blk.0.attn.flash',
    'q8_0/q4_0',
  ],
  'prefill-attention-tiled-q8_0': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed/tile',
    'blk.0.attn.prefill',
    'q8_0',
  ],
  'prefill-attention-rows-q4_0': [
    'synthetic:bench-60m-q4_k_m',
    'swiftshader/lanes1-u8-t8-packed-xs4/heavy',
    'blk.0.attn.prefill',
    'q4_0',
  ],
  embed: ['synthetic:bench-60m-q4_k_m', 'gpu/lanes32-sg-u2-t128-packed/tile', 'embed'],
  argmax: ['synthetic:bench-60m-q4_k_m', 'gpu/lanes32-sg-u2-t128-packed/tile', 'argmax'],
  'argmax-final': ['synthetic:bench-60m-q4_k_m', 'gpu/lanes32-sg-u2-t128-packed/tile', 'argmax_final'],
  sample: ['synthetic:bench-60m-q4_k_m', 'gpu/lanes32-sg-u2-t128-packed/tile', 'sample'],
  'sample-candidates': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed/tile',
    'sample_candidates',
  ],
  'sample-top-p-compact': [
    'synthetic:bench-60m-q4_k_m',
    'gpu/lanes32-sg-u2-t128-packed/tile',
    'sample_top_p_compact',
  ],
};

/**
 * The variant `id` of `cfg`: a full id (`gpu/lanes32-sg-u2-t128-packed/tile`) or a profile id alone
 * (`gpu`, `swiftshader`: {@link defaultVariant}).
 * @throws Error naming the variants there are.
 */
export function findVariant(id: string, cfg: LlamaConfig): PlanVariant {
  const profile = ADAPTER_PROFILES.find((p) => p.id === id.split('/')[0]);
  if (profile && !id.includes('/')) return defaultVariant(profile, cfg);
  const all = ADAPTER_PROFILES.flatMap((p) => planVariants(p, cfg));
  const v = all.find((x) => x.id === id);
  if (!v) throw new Error(`no kernel variant "${id}"; there are:\n${all.map((x) => `  ${x.id}`).join('\n')}`);
  return v;
}

/** The KV cache types the snapshots may name (core/validate.ts `KV_TYPES`). */
const SNAPSHOT_KV: readonly KvType[] = ['f16', 'f32', 'q8_0', 'q4_0'];

/**
 * A KV cache as `npm run wgsl -- --kv-type` and {@link GOLDEN_KERNELS} name it: `TYPE` for K and V, or
 * `K/V` (`q8_0/q4_0`: K in Q8_0, V in Q4_0, as llama.cpp's `-ctk q8_0 -ctv q4_0`).
 * @throws Error naming the types there are, for any other spelling.
 */
export function parseKvSpec(spec: string): { k: KvType; v: KvType } {
  const parts = spec.split('/');
  if (parts.length > 2 || parts.some((t) => !(SNAPSHOT_KV as readonly string[]).includes(t)))
    throw new Error(`no KV cache "${spec}": TYPE or K/V, each of ${SNAPSHOT_KV.join(', ')}`);
  return { k: parts[0] as KvType, v: (parts[1] ?? parts[0]) as KvType };
}

/**
 * The WGSL of the kernel `label` that `model` plans with `variant` and the KV cache `kv` ({@link parseKvSpec};
 * default f16) (`npm run wgsl -- MODEL VARIANT LABEL [--kv-type KV]`).
 * @throws Error naming the labels there are, when none is `label`; naming the types, for a bad `kv`.
 */
export async function kernelWGSL(model: string, variant: string, label: string, kv = 'f16'): Promise<string> {
  const { file, cfg } = snapshotModel(model);
  const cache = parseKvSpec(kv);
  const kernels = await plannedKernels(file, cfg, findVariant(variant, cfg), cache.k, undefined, cache.v);
  const k = kernels.find((x) => x.label === label);
  if (!k) {
    const labels = [...new Set(kernels.map((x) => x.label))];
    throw new Error(
      `${model} ${variant}${kv === 'f16' ? '' : ` (KV ${kv})`} plans no kernel "${label}"; it plans (blk.0's, the other layers alike):\n${labels
        .filter((l) => !/^blk\.[1-9]/.test(l))
        .map((l) => `  ${l}`)
        .join('\n')}`,
    );
  }
  return k.code;
}
