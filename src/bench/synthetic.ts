/**
 * Synthetic demo models on the page: the engine's `synthetic:SHAPE-TYPE` models (src/webgpu/model/synthetic.ts),
 * the exact tensor shapes and types of real models with seeded random weights made on the GPU, so nothing
 * is downloaded and every device runs the same model. Random weights: speed is real, text is noise.
 */
import { ggmlTypeByName, tensorBytes } from '../gguf/ggml-types.ts';
import {
  SYNTHETIC_FTYPES,
  SYNTHETIC_SHAPES,
  type SyntheticFtype,
  type SyntheticShape,
  syntheticArchParts,
  syntheticShapeRunnable,
  syntheticTensorTypes,
} from '../webgpu/model/synthetic.ts';
import { engineSupportSentence } from '../webgpu/support.ts';

export {
  SYNTHETIC_FTYPES,
  SYNTHETIC_SHAPES,
  type SyntheticFtype,
  type SyntheticShape,
  syntheticShapeRunnable,
};

/** The engine's name of a synthetic model: `synthetic:llama-3.2-1b-q4_k_m`. */
export function syntheticName(shape: SyntheticShape, ftype: SyntheticFtype): string {
  return `synthetic:${shape.id}-${ftype}`;
}

/** Parameters and weight bytes of a synthetic model (the same tensors and types the engine makes). */
export function syntheticSize(s: SyntheticShape, ftype: SyntheticFtype): { params: number; bytes: number } {
  const { shapes } = syntheticArchParts(s);
  const types = syntheticTensorTypes(s, ftype, shapes);
  let params = 0;
  let bytes = 0;
  for (const [name, shape] of shapes) {
    params += shape.reduce((a, b) => a * b, 1);
    bytes += tensorBytes(ggmlTypeByName(types.get(name) as string).id, shape, name);
  }
  return { params, bytes };
}

/**
 * The line under "What fits": what the engine runs (src/webgpu/support.ts) and the synthetic shapes left
 * out of the list because their architecture is not among them.
 */
export function fitSupportNote(): string {
  const out = SYNTHETIC_SHAPES.filter((s) => !syntheticShapeRunnable(s)).map(
    (s) => `${s.label} (${s.architecture})`,
  );
  return `This engine: ${engineSupportSentence()}${out.length ? ` Not listed, not supported yet: ${out.join(', ')}.` : ''}`;
}
