/**
 * Models to start with, for a person who has no GGUF file: a few small public GGUF models, each loaded in
 * one click through the model library's `hf:OWNER/REPO/FILE.gguf` shorthand (downloaded once, kept in this
 * browser), and the synthetic shapes (random weights made on the GPU, nothing downloaded). Each says its
 * download size, licence and what it needs: GPU memory for the weights, the KV cache at the engine's
 * default context and the run state (src/bench/llama-bench.ts's arithmetic on the model's real shapes), and
 * no `shader-f16` (our kernels read f16 through `unpack2x16float`). "Check what fits" probes this GPU's
 * memory (src/bench/llama-bench-gpu.ts `probeMemory`) and marks each model with `modelFits`' verdict.
 */
import { type FitsVerdict, type MemoryProbe, modelNeedBytes } from '../bench/llama-bench.ts';
import { fitModelOf, modelFits, probeMemory } from '../bench/llama-bench-gpu.ts';
import { syntheticName, syntheticSize } from '../bench/synthetic.ts';
import { loadContextLength } from '../core/validate.ts';
import { h } from '../dom/h.ts';
import { fmtBytes, fmtParams } from '../util/format.ts';
import { createGpuContext } from '../webgpu/device.ts';
import {
  SYNTHETIC_SHAPES,
  type SyntheticFtype,
  type SyntheticShape,
  syntheticGguf,
  syntheticShapeRunnable,
} from '../webgpu/model/synthetic.ts';

/** A recommended GGUF model. */
export interface RecommendedModel {
  /** What the list shows. */
  name: string;
  /** The model library's shorthand: hf:OWNER/REPO/FILE.gguf. */
  spec: `hf:${string}`;
  license: string;
  /** What it is good for, in a few words. */
  note: string;
  /** The synthetic model with its shapes and weight type: its sizes and memory need stand for the file's. */
  synthetic: { shape: string; ftype: SyntheticFtype };
}

/** Small public GGUF models our engine runs (llama, qwen2 architectures; types it dequantizes). */
export const RECOMMENDED_MODELS: readonly RecommendedModel[] = [
  {
    name: 'stories260K (F32)',
    spec: 'hf:ggml-org/models-moved/tinyllamas/stories260K.gguf',
    license: 'MIT',
    note: 'a toy (children’s stories), the test model: a small download, but its first load compiles the shaders, which takes a while (≈ 20 s) on a software GPU',
    synthetic: { shape: 'stories260k', ftype: 'f32' },
  },
  {
    name: 'SmolLM2 360M Instruct (Q8_0)',
    spec: 'hf:HuggingFaceTB/SmolLM2-360M-Instruct-GGUF/smollm2-360m-instruct-q8_0.gguf',
    license: 'Apache-2.0',
    note: 'a small chat model',
    synthetic: { shape: 'smollm2-360m', ftype: 'q8_0' },
  },
  {
    name: 'Qwen2.5 0.5B Instruct (Q4_K_M)',
    spec: 'hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf',
    license: 'Apache-2.0',
    note: 'a small chat model, many languages',
    synthetic: { shape: 'qwen2.5-0.5b', ftype: 'q4_k_m' },
  },
  {
    name: 'Llama 3.2 1B Instruct (Q4_K_M)',
    spec: 'hf:bartowski/Llama-3.2-1B-Instruct-GGUF/Llama-3.2-1B-Instruct-Q4_K_M.gguf',
    license: 'Llama 3.2 Community License',
    note: 'a capable small chat model',
    synthetic: { shape: 'llama-3.2-1b', ftype: 'q4_k_m' },
  },
];

/** The weight type the synthetic shapes are listed at (the usual download's). */
const SHAPES_TYPE: SyntheticFtype = 'q4_k_m';

/** The engine's default context for a shape: min(its context, 2048), as `modelFits` takes it. */
function engineContext(s: SyntheticShape): number {
  return loadContextLength(s.contextLength);
}

/** A synthetic model's header without a tokenizer (cheap), per name. */
const headers = new Map<string, ReturnType<typeof syntheticGguf>>();
function headerOf(shapeId: string, ftype: SyntheticFtype): ReturnType<typeof syntheticGguf> {
  const name = syntheticName(shapeOf(shapeId), ftype);
  let g = headers.get(name);
  if (!g) {
    g = syntheticGguf(name, 1, { tokenizer: false });
    headers.set(name, g);
  }
  return g;
}

function shapeOf(id: string): SyntheticShape {
  const s = SYNTHETIC_SHAPES.find((x) => x.id === id);
  if (!s) throw new Error(`no synthetic shape ${id}`);
  return s;
}

/** Weights, parameters and the GPU memory a model needs at the engine's default context (f16 KV cache). */
export function modelNeeds(
  shapeId: string,
  ftype: SyntheticFtype,
): { bytes: number; params: number; needBytes: number; contextLength: number } {
  const s = shapeOf(shapeId);
  const size = syntheticSize(s, ftype);
  const contextLength = engineContext(s);
  const need = modelNeedBytes(fitModelOf(headerOf(shapeId, ftype)), contextLength, 'f16');
  return { ...size, needBytes: need.needBytes, contextLength };
}

/** The mark and words of a verdict: ✓ fits, ✗ does not, ? needs more than a capped probe took. */
function verdictText(v: FitsVerdict): { mark: string; words: string } {
  if (v.ok) return { mark: '✓', words: 'fits this GPU' };
  if (v.certain === false) return { mark: '?', words: 'may not fit: needs more than the probe took' };
  return { mark: '✗', words: 'does not fit this GPU' };
}

export class RecommendedView {
  readonly element: HTMLElement;
  /** Called with a recommended model's `hf:` spec (the picker loads it through the model library). */
  onLoad: ((spec: string) => void) | undefined;
  /** Called with a synthetic model's shape id and weight type (the picker loads it). */
  onSynthetic: ((shape: string, ftype: SyntheticFtype) => void) | undefined;
  /** Called with this GPU's memory once probed (the picker's context select marks what fits). */
  onMemory: ((mem: MemoryProbe) => void) | undefined;
  private readonly list: HTMLElement;
  private readonly shapes: HTMLElement;
  private readonly status: HTMLElement;
  private readonly probeButton: HTMLButtonElement;
  private readonly loadButtons: HTMLButtonElement[] = [];
  private memory: MemoryProbe | undefined;
  private collapsed = false;

  constructor() {
    this.list = h('ul', { class: 'recs', 'data-testid': 'recommended-models' });
    this.shapes = h('ul', { class: 'recs recs--shapes', 'data-testid': 'recommended-shapes' });
    this.status = h('p', { class: 'field__hint', role: 'status', 'data-testid': 'recommended-status' });
    this.probeButton = h(
      'button',
      { type: 'button', class: 'button button--small', 'data-testid': 'recommended-probe' },
      'Check what fits this GPU',
    );
    this.probeButton.addEventListener('click', () => void this.probe());
    this.element = h(
      'details',
      { class: 'recs-box', open: '', 'data-testid': 'recommended' },
      h('summary', { class: 'recs-box__title' }, 'No GGUF file? Start with one of these'),
      h(
        'p',
        { class: 'field__hint' },
        'Downloaded once from Hugging Face into this browser (resumable, checked), then loaded from there. ' +
          'None needs shader-f16: our kernels read f16 without it. Memory: weights, KV cache (f16) and run ' +
          'state at the context the engine loads (at most 2048 tokens).',
      ),
      this.list,
      h(
        'p',
        { class: 'field__hint' },
        'Or a synthetic model: a real model’s shapes with random weights made on your GPU (speed is real, ' +
          'text is noise; nothing is downloaded).',
      ),
      this.shapes,
      h('div', { class: 'actions recs__actions' }, this.probeButton, this.status),
    );
    this.render();
  }

  /** Closes the list once, when the first model has loaded (it stays as the person leaves it after). */
  collapseOnce(): void {
    if (this.collapsed) return;
    this.collapsed = true;
    (this.element as HTMLDetailsElement).open = false;
  }

  /** Disables the load buttons while the page is busy (a load, a run). */
  setBusy(busy: boolean): void {
    for (const b of this.loadButtons) b.disabled = busy;
  }

  private verdict(shapeId: string, ftype: SyntheticFtype): FitsVerdict | undefined {
    if (!this.memory) return undefined;
    return modelFits(headerOf(shapeId, ftype), this.memory);
  }

  private fitCell(shapeId: string, ftype: SyntheticFtype): HTMLElement | string {
    const v = this.verdict(shapeId, ftype);
    if (!v) return '';
    const t = verdictText(v);
    const kind = v.ok ? 'ok' : v.certain === false ? 'maybe' : 'no';
    return h(
      'span',
      { class: `recs__fit recs__fit--${kind}`, title: v.reason, 'data-fit': kind },
      h('span', { 'aria-hidden': 'true' }, `${t.mark} `),
      t.words,
    );
  }

  private render(): void {
    const busy = this.loadButtons.some((b) => b.disabled);
    this.loadButtons.length = 0;
    const button = (label: string, name: string, run: () => void) => {
      const b = h(
        'button',
        { type: 'button', class: 'button button--small recs__button', 'aria-label': `${label} ${name}` },
        label,
      );
      b.disabled = busy;
      b.addEventListener('click', run);
      this.loadButtons.push(b);
      return b;
    };
    this.list.replaceChildren(
      ...RECOMMENDED_MODELS.map((m) => {
        const n = modelNeeds(m.synthetic.shape, m.synthetic.ftype);
        return h(
          'li',
          { class: 'recs__item', 'data-spec': m.spec },
          h(
            'div',
            { class: 'recs__main' },
            h('span', { class: 'recs__name' }, m.name),
            h(
              'span',
              { class: 'recs__facts' },
              `≈ ${fmtBytes(n.bytes)} download · ${fmtParams(n.params)} params · ${m.license} · needs ≈ ` +
                `${fmtBytes(n.needBytes)} of GPU memory at ${n.contextLength} tokens · ${m.note}`,
            ),
            this.fitCell(m.synthetic.shape, m.synthetic.ftype),
          ),
          button('Load', m.name, () => this.onLoad?.(m.spec)),
        );
      }),
    );
    const ftype = SHAPES_TYPE;
    this.shapes.replaceChildren(
      // Shapes of architectures the engine does not run yet have no fit to show.
      ...SYNTHETIC_SHAPES.filter(syntheticShapeRunnable).map((s) => {
        const n = modelNeeds(s.id, ftype);
        return h(
          'li',
          { class: 'recs__item', 'data-shape': s.id },
          h(
            'div',
            { class: 'recs__main' },
            h('span', { class: 'recs__name' }, `${s.label}, ${ftype.toUpperCase()}`),
            h(
              'span',
              { class: 'recs__facts' },
              `${fmtParams(n.params)} params · needs ≈ ${fmtBytes(n.needBytes)} at ${n.contextLength} tokens`,
            ),
            this.fitCell(s.id, ftype),
          ),
          button('Run', `synthetic ${s.label}`, () => this.onSynthetic?.(s.id, ftype)),
        );
      }),
    );
  }

  /** Probes this GPU's buffer limits and allocatable memory, then marks what fits. */
  async probe(): Promise<void> {
    this.probeButton.disabled = true;
    this.status.textContent = 'Probing the GPU’s memory…';
    let gpu: Awaited<ReturnType<typeof createGpuContext>> | undefined;
    try {
      gpu = await createGpuContext();
      this.memory = await probeMemory(gpu.device, { isFallback: gpu.info.isFallback });
      const m = this.memory;
      this.onMemory?.(m);
      this.status.textContent =
        `This GPU: buffers up to ${fmtBytes(m.maxBufferBytes)}, ` +
        `${m.capped ? 'at least ' : ''}${fmtBytes(m.allocatableBytes)} allocatable` +
        `${m.capped ? ' (the probe stops there)' : ''}.`;
    } catch (e) {
      this.status.textContent = `The probe failed: ${e instanceof Error ? e.message : String(e)}`;
    } finally {
      gpu?.device.destroy();
      this.probeButton.disabled = false;
    }
    this.render();
  }
}
