/**
 * Token embedding lookup (ggml_get_rows): x[t, :] = token_embd[ids[t], :].
 * Shapes: ids [T] (u32), token_embd [nEmbd, nVocab] (ggml order: nVocab rows of nEmbd), x [T, nEmbd].
 * The table may be split across bindings by rows (`parts`). Dispatch (ceil(nEmbd / 64), T).
 */
import { f32Lit, STEP_WGSL, type WeightType, WG, wgslArrayType } from './common.ts';
import { wgslLoader } from './loader.ts';

/** Bindings: 0 step, 1 ids, 2 x (out), then one per part. */
export function embedWGSL(o: {
  nEmbd: number;
  parts: { type: WeightType; rowStart: number; rowCount: number }[];
  /** Multiplies each embedding (Gemma: √nEmbd, ggml_scale in src/models/gemma2.cpp); default 1. */
  scale?: number;
}): string {
  const decl = o.parts
    .map(
      (p, i) =>
        `@group(0) @binding(${3 + i}) var<storage, read> e${i}: ${wgslArrayType(p.type)};\n${wgslLoader(`e${i}`, p.type)}`,
    )
    .join('\n');
  const body = o.parts
    .map(
      (p, i) =>
        `${i ? 'else ' : ''}if (id < ${p.rowStart + p.rowCount}u) { v = ld_e${i}((id - ${p.rowStart}u) * ${o.nEmbd}u + i); }`,
    )
    .join('\n    ');
  return `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
${decl}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) g: vec3u) {
  let i = g.x;
  let t = g.y;
  if (i >= ${o.nEmbd}u || t >= step.nTokens) { return; }
  let id = ids[t];
  var v = 0.0;
  ${body}
  x[t * ${o.nEmbd}u + i] = v${o.scale !== undefined && o.scale !== 1 ? ` * ${f32Lit(o.scale)}` : ''};
}`;
}
