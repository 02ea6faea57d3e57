/**
 * The page's engine choice for GGUF models (file, URL, `hf:`, library): `auto` (src/core/backend-choice.ts:
 * this page's WebGPU engine on a hardware adapter; llama.cpp's wasm build, wllama, on the CPU with no
 * WebGPU, no adapter or only a software adapter such as SwiftShader), or either one forced. After each
 * load it says which engine took the model and why (the same sentence as ModelInfo.backendReason).
 *
 * The default is `auto`, so every visitor gets an answer at the speed their machine allows: a software
 * adapter (SwiftShader) runs llama.cpp's wasm build, which beats a CPU emulating a GPU. The user's pick is
 * kept in localStorage ({@link ENGINE_KEY}) and restored, except that no adapter at all makes it `auto`.
 */
import { type BackendChoice, chooseBackend, type GpuLike } from '../core/backend-choice.ts';
import { h } from '../dom/h.ts';

/** What the select offers. */
export type EngineChoiceValue = 'auto' | 'webgpu' | 'wllama';

/** localStorage key of the user's last pick (the end-to-end tests preload `webgpu` to test our engine). */
export const ENGINE_KEY = 'webgpu-llm-bench:engine';

function storedChoice(): EngineChoiceValue | undefined {
  try {
    const v = localStorage.getItem(ENGINE_KEY);
    return v === 'auto' || v === 'webgpu' || v === 'wllama' ? v : undefined;
  } catch {
    return undefined; // storage unavailable (a private window): the default
  }
}

export class EngineChoice {
  readonly element: HTMLElement;
  private readonly select: HTMLSelectElement;
  private readonly reason: HTMLElement;
  /** The engine that took the last load (what the note says), while a model is loaded. */
  private shown: BackendChoice | undefined;

  constructor(private readonly gpu: () => GpuLike | undefined = () => navigator.gpu) {
    this.select = h(
      'select',
      { id: 'model-engine', class: 'input', 'aria-describedby': 'model-engine-reason' },
      h('option', { value: 'auto' }, 'Auto: WebGPU on a hardware GPU, else the CPU'),
      h('option', { value: 'webgpu' }, 'WebGPU (this page’s engine)'),
      h('option', { value: 'wllama' }, 'CPU: llama.cpp wasm (wllama)'),
    );
    this.select.value = storedChoice() ?? 'auto';
    this.select.addEventListener('change', () => {
      try {
        localStorage.setItem(ENGINE_KEY, this.select.value);
      } catch {
        // storage may be unavailable; the pick just is not kept
      }
      // The note said which engine took the loaded model "as chosen": a new pick is for the next load.
      const s = this.shown;
      if (s)
        this.reason.textContent = `The loaded model runs on ${engineName(s)}; this choice applies to the next load.`;
    });
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
    this.shown = choice;
    this.reason.textContent = choice ? `${engineName(choice)}: ${choice.reason}.` : '';
  }

  /** The load that {@link show} announced failed: no model runs on that engine (the note stays). */
  loadFailed(): void {
    this.shown = undefined;
  }
}

/** `llama.cpp wasm (CPU)` or `WebGPU`: the engine a choice resolved to. */
function engineName(c: BackendChoice): string {
  return c.backend === 'wllama' ? 'llama.cpp wasm (CPU)' : 'WebGPU';
}
