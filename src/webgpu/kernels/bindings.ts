/**
 * Binding by name: every kernel declares its bindings as `@group(0) @binding(i) var<…> name: …`, and the
 * model binds buffers to those names ({@link bindGroupByName}), so no positional buffer list has to be
 * kept equal to the WGSL declaration order by hand.
 */

/** A compiled-to-be kernel: its WGSL and, in binding order, the names of its bindings. */
export interface KernelSource {
  /** Label for the shader module, pipeline and errors (e.g. `blk.3.ffn.decode`). */
  label: string;
  code: string;
  /** Binding names in binding order (from {@link bindingNames}). */
  bindings: readonly string[];
}

const BINDING = /@group\(0\)\s*@binding\((\d+)\)\s*var(?:<[^>]*>)?\s+(\w+)\s*:/g;

/**
 * The names of a kernel's group-0 bindings, indexed by binding number.
 * @throws Error when the bindings are not numbered 0..n−1 (a kernel-builder bug).
 */
export function bindingNames(code: string): string[] {
  const names: string[] = [];
  for (const m of code.matchAll(BINDING)) {
    const i = Number(m[1]);
    if (names[i] !== undefined) throw new Error(`binding ${i} is declared twice (${names[i]}, ${m[2]})`);
    names[i] = m[2];
  }
  for (let i = 0; i < names.length; i++) {
    if (names[i] === undefined) throw new Error(`binding ${i} is missing (bindings must be 0..n-1)`);
  }
  return names;
}

/** A {@link KernelSource} for `code`, its binding names parsed from the declarations. */
export function kernelSource(label: string, code: string): KernelSource {
  return { label, code, bindings: bindingNames(code) };
}

/**
 * A bind group for `pipeline` (made from `src`) with each binding of `src` bound to `buffers[name]`.
 * @throws Error naming the binding when `buffers` lacks one of them (a model-builder bug, caught by the
 *   tests of every model path).
 */
export function bindGroupByName(
  device: GPUDevice,
  pipeline: GPUComputePipeline,
  src: KernelSource,
  buffers: Readonly<Record<string, GPUBuffer | undefined>>,
): GPUBindGroup {
  return device.createBindGroup({
    label: src.label,
    layout: pipeline.getBindGroupLayout(0),
    entries: src.bindings.map((name, binding) => {
      const buffer = buffers[name];
      if (!buffer) throw new Error(`${src.label}: no buffer for binding ${binding} (${name})`);
      return { binding, resource: { buffer } };
    }),
  });
}
