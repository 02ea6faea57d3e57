/**
 * The load options' context and KV cache selects (our engine; `LoadOptions.contextLength` and `kvType`):
 * once the model's header is known (a synthetic shape, a picked file's header, or the header our engine
 * read when it loaded a URL model),
 * the context select offers lengths up to the model's trained maximum (`{arch}.context_length`), each
 * marked with the cache type that makes it fit this GPU when its memory has been probed (fits at f16 /
 * needs q8_0 / needs q4_0 / does not fit; choosing one picks that type), and the KV select says what each
 * cache type takes at the chosen context. The figures are bench/kv-memory.ts's, the verdict `modelFits`'.
 */

import {
  type ContextFit,
  contextChoices,
  contextFits,
  kvCacheBytes,
  kvShapeOf,
  kvTypeUnusable,
} from '../bench/kv-memory.ts';
import type { MemoryProbe } from '../bench/llama-bench.ts';
import { modelFits, probeMemory } from '../bench/llama-bench-gpu.ts';
import type { KvType } from '../core/types.ts';
import { isKvType, KV_TYPES, loadContextLength } from '../core/validate.ts';
import { h } from '../dom/h.ts';
import type { GgufFile } from '../gguf/types.ts';
import { fmtBytes } from '../util/format.ts';
import { createGpuContext } from '../webgpu/device.ts';

/**
 * The page's advice on a context overflow (`contextOverflowText`): its context is the Context select beside
 * the model, read when the model loads (the engine's own message names the API's option and the CLI's flag).
 */
export const PAGE_CONTEXT_ADVICE = 'choose a larger Context beside the model and load it again';

/** The engine's default context for a trained maximum: min(it, 2048) (core/validate.ts `loadContextLength`). */
export function defaultContext(trained: number): number {
  return loadContextLength(trained);
}

/** A context option's words: `8192 tokens · needs q8_0` (without a probe: the tokens alone). */
export function contextLabel(n: number, fit: ContextFit | undefined): string {
  const tokens = `${n.toLocaleString('en-US')} tokens`;
  if (!fit) return tokens;
  if (fit.kvType === null)
    return `${tokens} · ${fit.verdict.certain === false ? 'may not fit (past the probe)' : 'does not fit'}`;
  return `${tokens} · ${fit.kvType === 'f16' ? 'fits at f16' : `needs ${fit.kvType}`}`;
}

export class KvContextOptions {
  readonly element: HTMLElement;
  readonly kvType: HTMLSelectElement;
  readonly context: HTMLSelectElement;
  /** The memory line under the selects: each type's bytes and the chosen one's verdict. */
  private readonly memoryLine: HTMLElement;
  private file: GgufFile | undefined;
  private memory: MemoryProbe | undefined;
  private fits = new Map<number, ContextFit>();
  private readonly probeButton: HTMLButtonElement;

  constructor(kvType: HTMLSelectElement) {
    this.kvType = kvType;
    this.context = h(
      'select',
      { id: 'model-context', class: 'input', 'data-testid': 'model-context' },
      h('option', { value: '' }, 'model default (≤ 2,048)'),
    );
    this.memoryLine = h('p', {
      class: 'kv-type__hint',
      'data-testid': 'kv-memory',
      'aria-live': 'polite',
    });
    this.context.addEventListener('change', () => {
      // Choosing a length picks the cache type that makes it fit.
      const fit = this.fits.get(Number(this.context.value));
      if (fit?.kvType) this.kvType.value = fit.kvType;
      this.render();
    });
    this.kvType.addEventListener('change', () => this.render());
    this.probeButton = h(
      'button',
      { type: 'button', class: 'button button--link', 'data-testid': 'kv-probe' },
      'Check what fits this GPU',
    );
    this.probeButton.addEventListener('click', () => void this.probe());
    this.element = h(
      'div',
      { class: 'kv-type' },
      h('label', { for: 'model-context', class: 'kv-type__label' }, 'Context'),
      this.context,
      this.probeButton,
      this.memoryLine,
    );
    this.render();
  }

  /** The model whose shape the selects describe (undefined: none known yet; the options go back to plain). */
  setModel(file: GgufFile | undefined): void {
    let trained: number | undefined;
    try {
      trained = file ? kvShapeOf(file).contextLength : undefined;
    } catch {
      trained = undefined; // a header the engine cannot run: its load will say why
    }
    this.file = trained === undefined ? undefined : file;
    const keep = this.context.value;
    const opts = [
      h(
        'option',
        { value: '' },
        `model default (≤ ${(trained ? defaultContext(trained) : 2048).toLocaleString('en-US')})`,
      ),
    ];
    if (trained !== undefined)
      for (const n of contextChoices(trained)) opts.push(h('option', { value: String(n) }, String(n)));
    this.context.replaceChildren(...opts);
    this.context.value = [...this.context.options].some((o) => o.value === keep) ? keep : '';
    this.refit();
  }

  /** This GPU's probed limits and allocatable memory (from the recommended list's probe). */
  setMemory(mem: MemoryProbe | undefined): void {
    this.memory = mem;
    this.refit();
  }

  /**
   * Probes this GPU's buffer limits and allocatable memory (bench/llama-bench-gpu.ts `probeMemory`, on a
   * device of its own, destroyed afterwards), then marks the context lengths.
   */
  async probe(): Promise<void> {
    this.probeButton.disabled = true;
    this.memoryLine.textContent = 'Probing the GPU’s memory…';
    let gpu: Awaited<ReturnType<typeof createGpuContext>> | undefined;
    try {
      gpu = await createGpuContext();
      this.setMemory(await probeMemory(gpu.device, { isFallback: gpu.info.isFallback }));
    } catch (e) {
      this.memoryLine.textContent = `The probe failed: ${e instanceof Error ? e.message : String(e)}`;
    } finally {
      gpu?.device.destroy();
      this.probeButton.disabled = false;
    }
  }

  /** The chosen context length (undefined: the engine's default). */
  contextLength(): number | undefined {
    const n = Number(this.context.value);
    return this.context.value && Number.isInteger(n) && n > 0 ? n : undefined;
  }

  private selectedKv(): KvType {
    return isKvType(this.kvType.value) ? this.kvType.value : 'f16';
  }

  private refit(): void {
    this.fits.clear();
    if (this.file && this.memory) {
      const lengths = [...this.context.options].map((o) => Number(o.value)).filter((n) => n > 0);
      for (const f of contextFits(this.file, this.memory, lengths)) this.fits.set(f.contextLength, f);
    }
    for (const o of this.context.options) {
      const n = Number(o.value);
      if (n > 0) o.textContent = contextLabel(n, this.fits.get(n));
    }
    this.render();
  }

  private render(): void {
    const file = this.file;
    if (!file) {
      for (const o of this.kvType.options) {
        o.textContent = o.value === 'f16' ? 'f16 (default)' : o.value;
        o.disabled = false;
      }
      this.memoryLine.textContent =
        'Pick a model (or a synthetic shape) to see what each cache type takes and how much context fits.';
      this.probeButton.hidden = true;
      return;
    }
    this.probeButton.hidden = false;
    const s = kvShapeOf(file);
    const ctx = this.contextLength() ?? defaultContext(s.contextLength);
    for (const o of this.kvType.options) {
      if (!isKvType(o.value)) continue;
      const unusable = kvTypeUnusable(o.value, s.headDim);
      o.disabled = unusable !== undefined;
      o.textContent = unusable
        ? `${o.value} · ${unusable}`
        : `${o.value}${o.value === 'f16' ? ' (default)' : ''} · ${fmtBytes(kvCacheBytes(s, ctx, o.value))}`;
    }
    // A choice this model cannot take (picked for another model) goes back to the default.
    if (this.kvType.selectedOptions[0]?.disabled) this.kvType.value = 'f16';
    const kv = this.selectedKv();
    const parts = [
      `KV cache at ${ctx.toLocaleString('en-US')} tokens (${s.nLayers} layers × ${s.nHeadKv} KV heads × ${s.headDim}${
        s.slidingWindow ? `; sliding-window layers keep the whole context here` : ''
      }): ${KV_TYPES.map((t) => `${t} ${fmtBytes(kvCacheBytes(s, ctx, t))}`).join(' · ')}.`,
    ];
    if (this.memory) {
      const v = modelFits(file, this.memory, ctx, kv);
      const m = this.memory;
      const alloc = `${m.capped ? 'at least ' : ''}${fmtBytes(m.allocatableBytes)} allocatable`;
      // The need in the page's units (the verdict's own reason, in MiB, only where a limit is the cause).
      const need = `needs ${fmtBytes(v.needBytes)} (weights ${fmtBytes(v.weightBytes)}, ${kv} KV cache ${fmtBytes(v.kvBytes)}, run state ${fmtBytes(v.stateBytes)})`;
      parts.push(
        v.ok
          ? `With ${kv}: fits this GPU; ${need}, ${alloc}.`
          : v.certain === false
            ? `With ${kv}: may not fit this GPU; ${need}, more than the probe took (${alloc}).`
            : v.needBytes > m.allocatableBytes
              ? `With ${kv}: does not fit this GPU; ${need}, ${alloc}.`
              : `With ${kv}: does not fit this GPU; ${v.reason}.`,
      );
    } else {
      parts.push('Check what fits this GPU to see which lengths each cache type allows.');
    }
    this.memoryLine.textContent = parts.join(' ');
  }
}
