/**
 * The page's engine choice for GGUF models (file, URL, `hf:`, library): `auto` (src/core/backend-choice.ts:
 * this page's WebGPU engine on a hardware adapter; llama.cpp's wasm build, wllama, on the CPU with no
 * WebGPU, no adapter or only a software adapter such as SwiftShader), or either one forced. After each
 * load it says which engine took the model and why (the same sentence as ModelInfo.backendReason).
 *
 * The default is `webgpu` where the page's GPU probe found an adapter (so a software adapter still runs
 * our engine unless `auto` is picked: the page is a GPU benchmark first) and `auto` where it found none,
 * so a browser without WebGPU loads and benchmarks on the CPU instead of stopping at "no WebGPU".
 */
import { type BackendChoice, chooseBackend, type GpuLike } from '../core/backend-choice.ts';
import { h } from '../dom/h.ts';

/** What the select offers. */
export type EngineChoiceValue = 'auto' | 'webgpu' | 'wllama';

export class EngineChoice {
  readonly element: HTMLElement;
  private readonly select: HTMLSelectElement;
  private readonly reason: HTMLElement;

  constructor(private readonly gpu: () => GpuLike | undefined = () => navigator.gpu) {
    this.select = h(
      'select',
      { id: 'model-engine', class: 'input', 'aria-describedby': 'model-engine-reason' },
      h('option', { value: 'webgpu' }, 'WebGPU (this page’s engine)'),
      h('option', { value: 'auto' }, 'Auto: WebGPU on a hardware GPU, else the CPU'),
      h('option', { value: 'wllama' }, 'CPU: llama.cpp wasm (wllama)'),
    );
    this.reason = h('span', {
      id: 'model-engine-reason',
      class: 'kv-type__hint',
      'data-testid': 'engine-reason',
      'aria-live': 'polite',
    });
    this.element = h(
      'div',
      { class: 'kv-type', 'data-testid': 'engine-choice' },
      h('label', { for: 'model-engine', class: 'kv-type__label' }, 'Engine'),
      this.select,
      this.reason,
    );
  }

  get value(): EngineChoiceValue {
    return this.select.value as EngineChoiceValue;
  }

  set value(v: EngineChoiceValue) {
    this.select.value = v;
  }

  /** After the page's GPU probe: no adapter at all makes `auto` the choice (wllama then runs the model). */
  noAdapter(): void {
    this.select.value = 'auto';
    this.reason.textContent = 'No WebGPU adapter here: models run on the CPU (llama.cpp wasm).';
  }

  /**
   * The engine for the next load, and why.
   * @returns `auto`: {@link chooseBackend}'s answer; a forced engine: it, saying it was chosen here. Never throws.
   */
  async resolve(): Promise<BackendChoice> {
    const v = this.value;
    if (v === 'auto') return chooseBackend(this.gpu());
    return {
      backend: v,
      reason: 'as chosen in the Engine select',
    };
  }

  /** Says which engine took the last load and why (empty to clear). */
  show(choice: BackendChoice | undefined): void {
    this.reason.textContent = choice
      ? `${choice.backend === 'wllama' ? 'llama.cpp wasm (CPU)' : 'WebGPU'}: ${choice.reason}.`
      : '';
  }
}
