/**
 * Synthetic demo models on the page: the engine's `synthetic:SHAPE-TYPE` models (src/webgpu/model/synthetic.ts),
 * the exact tensor shapes and types of real models with seeded random weights made on the GPU, so nothing
 * is downloaded and every device runs the same model. Random weights: speed is real, text is noise.
 */
import { ggmlTypeByName, tensorBytes } from '../webgpu/gguf/ggml-types.ts';
import { llamaTensorShapes } from '../webgpu/model/config.ts';
import {
  SYNTHETIC_FTYPES,
  SYNTHETIC_SHAPES,
  type SyntheticFtype,
  type SyntheticShape,
  tensorTypeFor,
} from '../webgpu/model/synthetic.ts';

export { SYNTHETIC_FTYPES, SYNTHETIC_SHAPES, type SyntheticFtype, type SyntheticShape };

/** The engine's name of a synthetic model: `synthetic:llama-3.2-1b-q4_k_m`. */
export function syntheticName(shape: SyntheticShape, ftype: SyntheticFtype): string {
  return `synthetic:${shape.id}-${ftype}`;
}

/** Parameters and weight bytes of a synthetic model (the same tensors and types the engine makes). */
export function syntheticSize(s: SyntheticShape, ftype: SyntheticFtype): { params: number; bytes: number } {
  const headDim = s.nEmbd / s.nHead;
  const shapes = llamaTensorShapes({
    nLayers: s.nLayers,
    nEmbd: s.nEmbd,
    nFF: s.nFF,
    nHead: s.nHead,
    nHeadKv: s.nHeadKv,
    headDim,
    nVocab: s.nVocab,
    tiedEmbeddings: s.tied,
    qkvBias: s.architecture === 'qwen2',
    qkNorm: s.architecture === 'qwen3',
    ropeFreqFactors: s.ropeFreqFactors ?? false,
    ropeDim: headDim,
  });
  let params = 0;
  let bytes = 0;
  for (const [name, shape] of shapes) {
    params += shape.reduce((a, b) => a * b, 1);
    bytes += tensorBytes(ggmlTypeByName(tensorTypeFor(ftype, name, shape, s.nLayers)).id, shape, name);
  }
  return { params, bytes };
}
