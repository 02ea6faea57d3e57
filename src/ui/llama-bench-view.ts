/**
 * The benchmark's part two on the page: llama-bench tests on the loaded model (pp/tg at KV depths), where
 * the GPU time goes (kernel shares, busy fraction), what fits this GPU (memory probe + verdict per synthetic
 * shape at a context length), and what a token costs (local power or a remote price per hour). Charts:
 * tok/s against KV depth, tok/s against model size and quantization (tests run this session; both drawn in
 * `llama-bench-charts.ts`), kernel shares.
 * The work runs in the bench worker (`BenchWorkerEngine.llamaBench`, workers/bench.worker.ts) and in
 * src/bench/llama-bench*.ts, so the tests are our engine's only: with a WebLLM model loaded they are disabled, and say why.
 */
import './llama-bench.css';
import {
  type FitsVerdict,
  type GpuProfile,
  type LlamaBenchPlan,
  type LlamaBenchTest,
  type MemoryProbe,
  planProblem,
  sweepDepths,
  type TokenCost,
  tokenCost,
} from '../bench/llama-bench.ts';
import { modelFits, probeMemory } from '../bench/llama-bench-gpu.ts';
import { fitSupportNote } from '../bench/synthetic.ts';
import { isEngineError } from '../core/errors.ts';
import type { KvType } from '../core/types.ts';
import { isKvType, kvTypeBytes } from '../core/validate.ts';
import { h } from '../dom/h.ts';
import { fmtBytes, fmtNum } from '../util/format.ts';
import { createGpuContext } from '../webgpu/device.ts';
import {
  SYNTHETIC_FTYPES,
  SYNTHETIC_SHAPES,
  type SyntheticFtype,
  syntheticGguf,
  syntheticShapeRunnable,
} from '../webgpu/model/synthetic.ts';
import { barList } from './charts.ts';
import { field } from './dom.ts';
import { depthChart, type SizePoint, sizeChart } from './llama-bench-charts.ts';
import { FieldError, readNumberField } from './number-field.ts';
import type { Session } from './session.ts';

/** The What-fits context by default: this, or the loaded model's context when that is shorter. */
const FIT_CONTEXT = 4096;

/** A field that takes a whole row of its form (a select whose options are long). */
function wide(f: HTMLElement): HTMLElement {
  f.classList.add('lb-form__wide');
  return f;
}

function numInput(id: string, value: string, attrs: Record<string, string> = {}): HTMLInputElement {
  return h('input', { id, class: 'input input--num', value, inputmode: 'decimal', ...attrs });
}

function intList(v: string): number[] {
  return v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(Number);
}

export class LlamaBenchView {
  readonly element: HTMLElement;
  private readonly nPrompt = numInput('lb-n-prompt', '512');
  private readonly nGen = numInput('lb-n-gen', '128');
  private readonly depths = h('input', {
    id: 'lb-depths',
    class: 'input',
    value: '0,512',
    inputmode: 'numeric',
  });
  private readonly reps = numInput('lb-reps', '3', { type: 'number', min: '1', max: '50' });
  private readonly sweepButton = h(
    'button',
    {
      type: 'button',
      class: 'button',
      'data-testid': 'lb-sweep',
      title: 'Fill the KV depths with 0, 1024, 2048, … up to the loaded context less the largest test',
    },
    'Sweep to context',
  );
  private readonly runButton = h(
    'button',
    { type: 'submit', class: 'button button--primary' },
    'Run llama-bench',
  );
  private readonly status = h('p', {
    class: 'card__lede lb-status',
    role: 'status',
    'data-testid': 'lb-status',
  });
  /** Says why the tests cannot run on the loaded model's backend (WebLLM's or the CPU's): {@link refresh}. */
  private readonly unavailable = h('p', { class: 'notice notice--info', 'data-testid': 'lb-unavailable' });
  private readonly testsBox = h('div', { class: 'lb-out', 'data-testid': 'lb-tests' });
  private readonly kernelsBox = h('div', { class: 'lb-out', 'data-testid': 'lb-kernels' });
  private readonly chartsBox = h('div', { class: 'lb-charts' });
  // What fits.
  private readonly fitType = h(
    'select',
    { id: 'lb-fit-type', class: 'input' },
    SYNTHETIC_FTYPES.map((t) => h('option', { value: t }, t.toUpperCase())),
  );
  private readonly fitCtx = numInput('lb-fit-ctx', String(FIT_CONTEXT), { type: 'number', min: '1' });
  /** The Context field was typed in: loading a model no longer sets it. */
  private fitCtxEdited = false;
  private readonly fitKv = h(
    'select',
    { id: 'lb-fit-kv', class: 'input' },
    h('option', { value: 'f16' }, 'F16 (default)'),
    h('option', { value: 'f32' }, 'F32'),
    h('option', { value: 'q8_0' }, 'Q8_0'),
    h('option', { value: 'q4_0' }, 'Q4_0'),
  );
  private readonly fitBox = h('div', { class: 'lb-out', 'data-testid': 'lb-fits' });
  private readonly probeButton = h('button', { type: 'button', class: 'button' }, 'Probe GPU memory');
  // Cost.
  private readonly costMode = h(
    'select',
    { id: 'lb-cost-mode', class: 'input' },
    h('option', { value: 'local' }, 'This machine (power × electricity)'),
    h('option', { value: 'remote' }, 'Remote instance (price per hour)'),
  );
  private readonly powerW = numInput('lb-power', '150');
  private readonly kwhPrice = numInput('lb-kwh', '0.30');
  private readonly pricePerHour = numInput('lb-pph', '2.50');
  private readonly currency = h('input', { id: 'lb-currency', class: 'input input--num', value: 'USD' });
  private readonly costBox = h('div', { class: 'lb-out', 'data-testid': 'lb-cost' });

  private memory: MemoryProbe | undefined;
  private tests: LlamaBenchTest[] = [];
  private gpu: GpuProfile | undefined;
  private sizePoints: SizePoint[] = [];

  constructor(private readonly session: Session) {
    const form = h(
      'form',
      { class: 'lb-form', 'aria-label': 'llama-bench tests' },
      field('Prompt tokens (pp)', this.nPrompt),
      field('Generated tokens (tg)', this.nGen),
      field('KV depths', this.depths, 'Comma-separated, e.g. 0,2048'),
      field('Repetitions', this.reps),
      h('div', { class: 'actions' }, this.runButton, this.sweepButton),
    );
    this.sweepButton.addEventListener('click', () => this.sweepToContext());
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.run();
    });
    this.probeButton.addEventListener('click', () => void this.probe());
    for (const el of [this.fitType, this.fitCtx, this.fitKv])
      el.addEventListener('change', () => this.renderFits());
    this.fitCtx.addEventListener('input', () => {
      this.fitCtxEdited = true;
    });
    for (const el of [this.costMode, this.powerW, this.kwhPrice, this.pricePerHour, this.currency])
      el.addEventListener('input', () => this.renderCost());
    this.costMode.addEventListener('change', () => this.renderCost());

    this.element = h(
      'section',
      { class: 'card card--wide lb', 'aria-labelledby': 'lb-heading', 'data-card': 'llama-bench' },
      h(
        'h2',
        { id: 'lb-heading', class: 'card__title' },
        'llama-bench, where the time goes, what fits, what a token costs',
      ),
      h(
        'p',
        { class: 'card__lede' },
        'llama.cpp-style pp/tg tests on the loaded model at KV-cache depths (warm-up, then repetitions; mean ± std), ' +
          'with GPU time per kernel family from timestamp queries.',
      ),
      h(
        'div',
        { class: 'lb-cols' },
        h('div', {}, h('h3', {}, 'Tests'), this.unavailable, form, this.status, this.testsBox),
        h('div', {}, h('h3', {}, 'Where the time goes'), this.kernelsBox),
      ),
      this.chartsBox,
      h(
        'div',
        { class: 'lb-cols' },
        h(
          'div',
          {},
          h('h3', {}, 'What fits'),
          h(
            'div',
            { class: 'lb-form' },
            field('Weight type', this.fitType),
            field('Context (tokens)', this.fitCtx),
            field('KV cache', this.fitKv),
            h('div', { class: 'actions' }, this.probeButton),
          ),
          this.fitBox,
        ),
        h(
          'div',
          {},
          h('h3', {}, 'What a token costs'),
          h(
            'div',
            { class: 'lb-form' },
            wide(field('Basis', this.costMode)),
            field('Power (W)', this.powerW),
            field('Electricity per kWh', this.kwhPrice),
            field('Price per hour', this.pricePerHour),
            field('Currency', this.currency),
          ),
          this.costBox,
        ),
      ),
    );
    session.addEventListener('change', () => this.refresh());
    this.refresh();
    this.renderKernels();
    this.renderCharts();
    this.renderFits();
    this.renderCost();
  }

  private refresh(): void {
    const m = this.session.model;
    this.defaultFitContext();
    const other = Boolean(m) && !this.session.ours;
    this.unavailable.hidden = !other;
    const cpu = this.session.backend === 'wllama';
    if (other)
      this.unavailable.replaceChildren(
        h(
          'strong',
          {},
          cpu
            ? 'llama-bench tests are not available on the CPU engine (llama.cpp wasm). '
            : 'llama-bench tests are not available for WebLLM models. ',
        ),
        cpu
          ? 'They run inside our WebGPU engine (its KV cache at chosen depths, its kernel timestamps). Choose ' +
              'Engine: WebGPU beside the model and load it again to run them; the memory probe and the cost ' +
              'figures below still work.'
          : 'They run inside our engine (its KV cache at chosen depths, its kernel timestamps), which WebLLM ' +
              'does not expose. Load a GGUF or synthetic model to run them; the memory probe and the cost ' +
              'figures below still work.',
      );
    this.runButton.disabled = !m || other || Boolean(this.session.task);
    this.sweepButton.disabled = !m || other || Boolean(this.session.task);
    if (other) this.status.textContent = `Model: ${m?.id} (${cpu ? 'CPU: llama.cpp wasm' : 'WebLLM'}).`;
    else if (!this.session.task && !this.tests.length)
      this.status.textContent = m
        ? `Model: ${m.id}, context ${m.info.contextLength}${m.info.kvType ? `, ${m.info.kvType} KV cache` : ''}.`
        : 'Load a model first.';
  }

  /**
   * The What-fits context follows the loaded model until it is edited: min(4096, the model's context), so
   * the verdicts are not for a context the model cannot hold.
   */
  private defaultFitContext(): void {
    if (this.fitCtxEdited) return;
    const ctx = this.session.model?.info.contextLength;
    const want = String(ctx && ctx > 0 ? Math.min(FIT_CONTEXT, ctx) : FIT_CONTEXT);
    if (this.fitCtx.value === want) return;
    this.fitCtx.value = want;
    this.renderFits();
  }

  /**
   * Fills the depths with 0, 1024, 2048, … up to the loaded context minus the largest test (see
   * {@link sweepDepths}), so the chart shows tok/s against depth across the whole context.
   */
  sweepToContext(): void {
    const m = this.session.model;
    if (!m) return;
    const sizes = [...intList(this.nPrompt.value), ...intList(this.nGen.value)].filter(
      (n) => Number.isInteger(n) && n > 0,
    );
    const biggest = sizes.length ? Math.max(...sizes) : 1;
    const depths = sweepDepths(m.info.contextLength, biggest);
    if (depths.length === 0) {
      this.status.textContent = `No depth fits the loaded context (${m.info.contextLength} tokens) with a ${biggest}-token test: use smaller sizes.`;
      return;
    }
    this.depths.value = depths.join(',');
    this.status.textContent = `Depths ${depths.join(', ')}: up to the loaded context of ${m.info.contextLength} tokens less the ${biggest}-token test.`;
  }

  plan(): LlamaBenchPlan {
    return {
      nPrompt: intList(this.nPrompt.value),
      nGen: intList(this.nGen.value),
      depths: intList(this.depths.value),
      reps: readNumberField(this.reps, 'Repetitions', { integer: true, min: 1 }),
    };
  }

  async run(): Promise<void> {
    const m = this.session.model;
    if (!m || !this.session.ours) return;
    let plan: LlamaBenchPlan;
    try {
      plan = this.plan();
    } catch (e) {
      this.status.textContent = `Check the plan: ${e instanceof Error ? e.message : e}.`;
      if (e instanceof FieldError) e.field.focus();
      return;
    }
    const problem = planProblem(plan);
    if (problem) {
      this.status.textContent = `Check the plan: ${problem}.`;
      return;
    }
    const ctx = m.info.contextLength;
    const biggest = Math.max(...plan.nPrompt, ...plan.nGen);
    const depths = plan.depths.filter((d) => d + biggest <= ctx);
    const skipped = plan.depths.filter((d) => !depths.includes(d));
    if (depths.length === 0) {
      this.status.textContent = `No depth fits the loaded context (${ctx} tokens): reload with a longer context or use smaller sizes.`;
      return;
    }
    if (!this.session.begin('bench')) return;
    try {
      const res = await this.session.ourEngine.llamaBench({ plan: { ...plan, depths }, profile: {} }, (p) => {
        this.status.textContent =
          p.rep === 0
            ? `${p.test}: warm-up`
            : `${p.test}: repetition ${p.rep} of ${p.reps} · ${fmtNum(p.tokensPerSecond)} tok/s`;
      });
      this.tests = res.tests;
      this.gpu = res.gpu;
      const tg = res.tests.filter((t) => t.nGen > 0).sort((a, b) => a.depth - b.depth)[0];
      const pp = res.tests.filter((t) => t.nPrompt > 0).sort((a, b) => a.depth - b.depth)[0];
      if (tg) {
        this.sizePoints = this.sizePoints.filter((p) => p.model !== m.id);
        this.sizePoints.push({
          model: m.id,
          quant: m.info.tensorTypes.join('+'),
          bytes: m.info.weightBytes,
          tg: tg.tokensPerSecond.mean,
          pp: pp?.tokensPerSecond.mean,
        });
      }
      this.status.textContent = `Done: ${res.tests.length} tests on ${m.id}.${skipped.length ? ` Skipped depths ${skipped.join(', ')} (past the context of ${ctx}).` : ''}`;
    } catch (e) {
      this.status.textContent = `llama-bench failed${isEngineError(e) ? ` (${e.code})` : ''}: ${e instanceof Error ? e.message : String(e)}`;
    } finally {
      this.session.end('bench');
    }
    this.renderTests();
    this.renderKernels();
    this.renderCharts();
    this.renderCost();
  }

  private renderTests(): void {
    const m = this.session.model;
    if (!this.tests.length) {
      this.testsBox.replaceChildren();
      return;
    }
    this.testsBox.replaceChildren(
      h(
        'p',
        { class: 'lb-facts' },
        `${m?.id ?? ''} · ${fmtBytes(m?.info.weightBytes)} of weights${m?.info.kvType ? ` · ${m.info.kvType} KV cache` : ''} · context ${m?.info.contextLength ?? '—'}`,
      ),
      h(
        'div',
        { class: 'table-wrap', tabindex: '0' },
        h(
          'table',
          { class: 'data lb-table' },
          h('caption', { class: 'visually-hidden' }, 'llama-bench tests'),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['test', 't/s'].map((c, i) => h('th', { scope: 'col', class: i % 2 ? 'num' : undefined }, c)),
            ),
          ),
          h(
            'tbody',
            {},
            this.tests.map((t) =>
              h(
                'tr',
                {},
                h('td', {}, t.name),
                h(
                  'td',
                  { class: 'num' },
                  // One repetition has no spread to show ("± 0.00" would claim a measured zero).
                  t.samples.length > 1
                    ? `${fmtNum(t.tokensPerSecond.mean)} ± ${fmtNum(t.tokensPerSecond.std)}`
                    : `${fmtNum(t.tokensPerSecond.mean)} (1 run)`,
                ),
              ),
            ),
          ),
        ),
      ),
    );
  }

  private renderKernels(): void {
    const g = this.gpu;
    if (!g) {
      this.kernelsBox.replaceChildren(
        h('p', { class: 'card__lede' }, 'Run the tests to see GPU time per kernel family.'),
      );
      return;
    }
    const head = h(
      'p',
      { class: 'lb-facts' },
      `GPU ${g.gpuMsPerToken === null ? '—' : `${fmtNum(g.gpuMsPerToken)} ms`} of ${fmtNum(g.wallMsPerToken)} ms per decode token · busy ${
        g.busyFraction === null ? '—' : `${Math.round(g.busyFraction * 100)} %`
      } · ${g.dispatchesPerToken} dispatches per token · timestamps ${g.timestamps}`,
    );
    const parts: HTMLElement[] = [head];
    if (g.note) parts.push(h('p', { class: 'notice notice--info' }, g.note));
    if (g.kernels.length)
      parts.push(
        barList(
          'Decode GPU time by kernel family',
          g.kernels.map((k) => ({
            label: k.name,
            value: k.share * 100,
            unit: '%',
            detail: `${fmtNum(k.msPerToken)} ms/token`,
          })),
        ),
      );
    this.kernelsBox.replaceChildren(...parts);
  }

  private renderCharts(): void {
    // The loaded context the tests ran in: the depth axis reaches it.
    const ctx = this.tests.length ? this.session.model?.info.contextLength : undefined;
    this.chartsBox.replaceChildren(depthChart(this.tests, ctx), sizeChart(this.sizePoints));
  }

  async probe(): Promise<void> {
    this.probeButton.disabled = true;
    this.fitBox.replaceChildren(h('p', { class: 'card__lede' }, 'Probing…'));
    let gpu: Awaited<ReturnType<typeof createGpuContext>> | undefined;
    try {
      gpu = await createGpuContext();
      this.memory = await probeMemory(gpu.device, { isFallback: gpu.info.isFallback });
    } catch (e) {
      this.fitBox.replaceChildren(
        h('p', { class: 'notice notice--warn' }, `The probe failed: ${e instanceof Error ? e.message : e}`),
      );
      return;
    } finally {
      gpu?.device.destroy();
      this.probeButton.disabled = false;
    }
    this.renderFits();
  }

  private renderFits(): void {
    const mem = this.memory;
    if (!mem) {
      this.fitBox.replaceChildren(
        h(
          'p',
          { class: 'card__lede' },
          'Probe the GPU to see its buffer limits, how much memory it lets you allocate, and which models fit.',
        ),
      );
      return;
    }
    let ctx: number;
    try {
      ctx = readNumberField(this.fitCtx, 'Context', { integer: true, min: 1 });
    } catch (e) {
      this.fitBox.replaceChildren(
        h('p', { class: 'notice notice--warn' }, e instanceof Error ? e.message : String(e)),
      );
      return;
    }
    const type = this.fitType.value as SyntheticFtype;
    const kv: KvType = isKvType(this.fitKv.value) ? this.fitKv.value : 'f16';
    // Shapes of architectures the engine does not run yet cannot be sized by its rules: left out.
    const rows = SYNTHETIC_SHAPES.filter(syntheticShapeRunnable).map((s) => {
      const name = `synthetic:${s.id}-${type}`;
      const v: FitsVerdict = modelFits(syntheticGguf(name), mem, Math.min(ctx, s.contextLength), kv);
      return { s, v };
    });
    const loaded = this.loadedFit(mem);
    this.fitBox.replaceChildren(
      loaded ?? '',
      h(
        'p',
        { class: 'lb-facts' },
        `Largest buffer ${fmtBytes(mem.maxBufferBytes)} · largest binding ${fmtBytes(mem.maxBindingBytes)} · allocatable ${
          mem.capped
            ? `at least ${fmtBytes(mem.allocatableBytes)} (probe capped)`
            : fmtBytes(mem.allocatableBytes)
        }${mem.capped ? ' · ? = needs more than the probe took: may not fit' : ''}`,
      ),
      h(
        'ul',
        { class: 'lb-fits' },
        rows.map(({ s, v }) =>
          h(
            'li',
            { class: v.ok ? 'lb-fit lb-fit--ok' : 'lb-fit lb-fit--no', title: v.reason },
            h(
              'span',
              { class: 'lb-fit__mark', 'aria-hidden': 'true' },
              v.ok ? '✓' : v.certain === false ? '?' : '✗',
            ),
            h('span', { class: 'lb-fit__name' }, `${s.label} ${type.toUpperCase()}, ${kv} KV`),
            h('span', { class: 'lb-fit__need' }, `${fmtBytes(v.needBytes)} at ${v.contextLength ?? '—'}`),
            h('span', { class: 'visually-hidden' }, `${v.ok ? 'fits' : 'does not fit'}: ${v.reason}`),
          ),
        ),
      ),
      h('p', { class: 'lb-facts', 'data-testid': 'fit-support' }, fitSupportNote()),
    );
  }

  /**
   * The loaded model at its loaded context: weights + KV cache of the types it was loaded with (layers ×
   * ctx × kvDim × (K's + V's bytes per value: 2 for f16, 4 for f32, 34/32 for q8_0, 18/32 for q4_0; an
   * engine that does not say ran f32) against the allocatable
   * memory (the per-tensor binding checks need the file's tensors: see the shapes below).
   */
  private loadedFit(mem: MemoryProbe): HTMLElement | undefined {
    const m = this.session.model;
    if (!m?.info.kvDim) return undefined;
    const i = m.info;
    const kv: KvType = i.kvType ?? 'f32';
    const kvV: KvType = i.kvTypeV ?? kv;
    // With the header (synthetic shapes, picked files): modelFits' need, the figure the fits list and the
    // load options show (weights, KV cache and run state); else weights and KV cache alone, said so.
    const v = m.header ? modelFits(m.header, mem, i.contextLength, kv, kvV) : undefined;
    const withState = v !== undefined && v.needBytes > 0;
    const need = withState
      ? v.needBytes
      : i.weightBytes + i.nLayers * i.contextLength * (i.kvDim ?? 0) * (kvTypeBytes(kv) + kvTypeBytes(kvV));
    const ok = need <= mem.allocatableBytes;
    const mark = ok ? '✓' : mem.capped ? '?' : '✗';
    return h(
      'p',
      { class: `lb-facts lb-loaded lb-loaded--${ok ? 'ok' : 'no'}`, 'data-testid': 'lb-fit-loaded' },
      h('span', { class: 'lb-fit__mark' }, mark),
      ` Loaded ${m.id}: needs ${fmtBytes(need)} (weights${withState ? ',' : ' and'} ${kv === kvV ? kv : `${kv}/${kvV}`} KV cache at ${i.contextLength} tokens${withState ? ' and run state' : ''})`,
    );
  }

  /** The cost for the last decode speed measured here, or undefined. */
  cost(): TokenCost | undefined {
    const tg = this.tests.filter((t) => t.nGen > 0).sort((a, b) => a.depth - b.depth)[0];
    const tps = tg?.tokensPerSecond.mean;
    if (!(tps && tps > 0)) return undefined;
    const currency = this.currency.value.trim() || 'USD';
    try {
      return this.costMode.value === 'remote'
        ? tokenCost({
            basis: 'remote',
            pricePerHour: Number(this.pricePerHour.value),
            currency,
            tokensPerSecond: tps,
          })
        : tokenCost({
            basis: 'local',
            powerW: Number(this.powerW.value),
            pricePerKWh: Number(this.kwhPrice.value),
            currency,
            tokensPerSecond: tps,
          });
    } catch {
      return undefined;
    }
  }

  private renderCost(): void {
    const remote = this.costMode.value === 'remote';
    for (const [el, show] of [
      [this.powerW, !remote],
      [this.kwhPrice, !remote],
      [this.pricePerHour, remote],
    ] as const)
      (el.closest('.field') as HTMLElement | null)?.toggleAttribute('hidden', !show);
    const c = this.cost();
    this.costBox.replaceChildren(
      c
        ? h(
            'p',
            { class: 'lb-cost' },
            h('strong', {}, `${c.per1MOutputTokens.toFixed(c.per1MOutputTokens < 1 ? 4 : 2)} ${c.currency}`),
            ` per 1M output tokens at ${fmtNum(c.tokensPerSecond)} tok/s (${c.pricePerHour.toFixed(3)} ${c.currency}/h)`,
          )
        : h('p', { class: 'card__lede' }, 'Run the tests (a tg test) to price a token.'),
    );
  }
}
