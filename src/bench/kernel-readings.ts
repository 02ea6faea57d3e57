/**
 * Which kernels a loaded model runs and why, as plain-language readings for the GPU tab ("Kernels of the
 * loaded model", src/ui/report.ts): a pure reading of our engine's `ModelInfo.kernels`
 * (webgpu/kernel-plan.ts `describePlan`), no DOM. It says the prefill matmul tile and how it was chosen
 * (with the trial's times), whether subgroup matrices were available and chosen and, where not, the reason
 * the load recorded (the f16, integer and large tiles), the prefill attention kernel with its own
 * subgroup-matrix verdict and trial, the decode side (mmv layout, fallback kernel, decode attention) and
 * the token pick (the argmax's stripes, the GPU sampler's passes and which of them each kind of request runs).
 */

import { fmtCount, fmtSig } from '../util/format.ts';
import type { ArgmaxInfo, KernelsInfo, PickPass, SamplerInfo } from '../webgpu/kernel-plan.ts';
import type { Reading } from './gpu-report.ts';

type SelfTest = { config: string; ok: boolean; reason?: string; i8Units?: string }[] | undefined;

const ms = (n: number) => `${fmtSig(n, 3)} ms`;

/** `float 1.23 ms, sgmat 0.456 ms` from a trial's entries. */
function trialText<T>(trials: readonly T[], name: (t: T) => string, time: (t: T) => number): string {
  return trials.map((t) => `${name(t)} ${ms(time(t))}`).join(', ');
}

/** `self-test: f16→f32 16x16x16 passed; f16→f32 16x8x16 failed (reason)`, or undefined when none ran. */
function selfTestText(st: SelfTest): string | undefined {
  if (!st?.length) return undefined;
  return `self-test: ${st.map((t) => `${t.config}${t.i8Units ? ` (i8 offsets in ${t.i8Units})` : ''} ${t.ok ? 'passed' : `failed${t.reason ? ` (${t.reason})` : ''}`}`).join('; ')}`;
}

const CHOSEN_BY: Record<string, string> = {
  measured: 'chosen by a timed trial at this load',
  cached: 'chosen by an earlier trial on this adapter',
  option: 'set by a load option',
  unavailable:
    'the only tile available (no integer dot product, or a weight type the integer tile does not take)',
  only: 'the only candidate',
  'ffn-trial': "the gate+up's trial winner",
};

/** The prefill matmul readings (tile and subgroup matrices). */
function prefillReadings(p: NonNullable<KernelsInfo['prefill']>): Reading[] {
  if (p.matmul === 'mmv') {
    return [
      {
        level: 'info',
        text: `Prefill matmuls: register tiles of ${p.tokensPerTile} tokens (layout ${p.mmvLayout ?? 'default'}), the software adapter's kernel.`,
        detail:
          'On a software adapter the workgroup-memory tiles (float, integer-dot, subgroup-matrix) are not tried: register tiles run faster on the CPU.',
      },
    ];
  }
  const sg = p.subgroupMatrix;
  const intDot = p.intDot ?? [];
  const tile = sg?.chosen
    ? `subgroup-matrix tile ${sg.tile ?? ''}`.trim()
    : intDot.length
      ? `integer-dot tile (${intDot.join(', ')}; float for the rest)`
      : 'float tile';
  const how = p.tileChosenBy ? CHOSEN_BY[p.tileChosenBy] : undefined;
  const out: Reading[] = [
    {
      level: 'ok',
      text: `Prefill matmuls: ${tile}, ${p.tokensPerTile} tokens per tile${how ? `; ${how}` : ''}.`,
      ...(p.tileTrials?.length
        ? {
            detail: `Trial, ms per dispatch: ${trialText(
              p.tileTrials,
              (t) => t.tile,
              (t) => t.ms,
            )}.`,
          }
        : {}),
    },
  ];
  if (!sg) return out;
  const failed = [sg.selfTest, sg.int?.selfTest, sg.big?.selfTest].some((st) => st?.some((t) => !t.ok));
  const details = [
    sg.available ? `Configurations: ${sg.configs.join(', ') || 'none reported'}.` : undefined,
    sg.int
      ? `Integer tile (i8 → i32): ${sg.int.chosen ? 'chosen' : `not chosen: ${sg.int.reason ?? ''}`}${sg.int.i8Units ? `; i8 offsets in ${sg.int.i8Units}` : ''}.`
      : undefined,
    sg.big
      ? `Large f16 tile (64×128): ${sg.big.chosen ? 'chosen' : `not chosen: ${sg.big.reason ?? ''}`}.`
      : undefined,
    selfTestText(sg.selfTest),
    sg.int ? selfTestText(sg.int.selfTest)?.replace('self-test', 'integer tile self-test') : undefined,
    sg.big ? selfTestText(sg.big.selfTest)?.replace('self-test', 'large tile self-test') : undefined,
  ].filter(Boolean);
  const whyNot = sg.reason ?? sg.int?.reason ?? sg.big?.reason ?? 'not chosen';
  out.push({
    level: sg.chosen ? 'ok' : failed ? 'warn' : 'info',
    text: sg.chosen
      ? `Subgroup matrices (prefill matmuls): chosen, tile ${sg.tile ?? ''}.`.replace(' .', '.')
      : `Subgroup matrices (prefill matmuls): ${sg.available ? 'available, not chosen' : 'not available'}: ${whyNot}.`,
    ...(details.length ? { detail: details.join(' ') } : {}),
  });
  return out;
}

/** The attention readings (prefill kernel with its subgroup-matrix verdict, decode attention). */
function attentionReadings(a: NonNullable<KernelsInfo['attention']>): Reading[] {
  const out: Reading[] = [];
  const p = a.prefill;
  if (p) {
    const shape = [
      p.tokensPerWorkgroup ? `${p.tokensPerWorkgroup} tokens` : '',
      p.headsPerWorkgroup ? `${p.headsPerWorkgroup} heads per workgroup` : '',
      p.kvTile ? `KV tiles of ${p.kvTile}` : '',
    ]
      .filter(Boolean)
      .join(', ');
    const sg = p.subgroupMatrix;
    const failed = sg?.selfTest?.some((t) => !t.ok);
    const details = [
      p.trial?.length
        ? `Trial (512 tokens), ms per dispatch: ${trialText(
            p.trial,
            (t) => t.kernel,
            (t) => t.ms,
          )}.`
        : undefined,
      selfTestText(sg?.selfTest),
    ].filter(Boolean);
    out.push({
      level: sg && !sg.chosen && failed ? 'warn' : 'ok',
      text:
        `Prefill attention: ${p.kernel} kernel${shape ? ` (${shape})` : ''}` +
        (sg
          ? sg.chosen
            ? `; subgroup matrices chosen${sg.tile ? `, tile ${sg.tile}` : ''}.`
            : `; subgroup matrices not chosen: ${sg.reason ?? 'not chosen'}.`
          : '.'),
      ...(details.length ? { detail: details.join(' ') } : {}),
    });
  }
  out.push({
    level: 'info',
    text:
      a.decode === 'flash'
        ? `Decode attention: flash-decoding, ${a.layout ?? 'tiled'} layout, ${a.lanes ?? 1} lane${(a.lanes ?? 1) === 1 ? '' : 's'} per position, chunks of at least ${a.minChunk ?? '?'} positions.`
        : 'Decode attention: the prefill attention kernel (the head shape rules flash-decoding out).',
  });
  return out;
}

/** The decode matmul reading. */
function decodeReading(k: KernelsInfo): Reading {
  const counts = `${k.matmuls.mmv} matmuls per token on mmv, ${k.matmuls.fallback} on the ${k.fallback} kernel`;
  if (k.decode !== 'mmv') {
    return { level: 'info', text: `Decode matmuls: the ${k.decode} kernel (${counts}).` };
  }
  const how = k.chosenBy ? CHOSEN_BY[k.chosenBy] : undefined;
  const others = Object.entries(k.mmvLayouts ?? {})
    .filter(([f, c]) => f !== 'ffn' && c && c.layout !== k.mmvLayout)
    .map(([f, c]) => `${f} ${c?.layout}`);
  const details = [
    k.trials?.length
      ? `Gate+up trial${k.mmvLayouts?.ffn?.trialCopies ? ` (over ${k.mmvLayouts.ffn.trialCopies} copies of the matrix)` : ''}, ms per dispatch: ${trialText(
          k.trials,
          (t) => t.layout,
          (t) => t.ms,
        )}.`
      : undefined,
    others.length ? `Other layouts: ${others.join(', ')}.` : undefined,
    k.dispatchesPerToken ? `${k.dispatchesPerToken} dispatches per token.` : undefined,
  ].filter(Boolean);
  return {
    level: 'ok',
    text: `Decode matmuls: mmv, layout ${k.mmvLayout ?? 'default'}${how ? ` (${how})` : ''}; ${counts}.`,
    ...(details.length ? { detail: details.join(' ') } : {}),
  };
}

/**
 * The small-batch reading (`KernelsInfo.smallBatch`, model/small-batch.ts): whether batches of 2 … N tokens
 * (short prompts, speculative verify passes) run through the decode mmv kernels, and why; their attention.
 */
function smallBatchReading(sb: NonNullable<KernelsInfo['smallBatch']>): Reading {
  const on = sb.maxTokens >= 2;
  const by =
    sb.chosenBy === 'trial'
      ? 'chosen by a timed trial at this load'
      : sb.chosenBy === 'cached'
        ? 'chosen by an earlier trial of this model on this adapter'
        : sb.chosenBy === 'option'
          ? 'set by the smallBatch option'
          : sb.chosenBy === 'unavailable'
            ? 'unavailable: mmv runs no decode matmul here'
            : 'the default for this adapter and model';
  const trials = sb.trials?.length
    ? `Trial, ms per whole forward pass (mmv / prefill kernels): ${sb.trials
        .map((t) => `${t.tokens} tokens ${fmtSig(t.mmvMs, 3)} / ${fmtSig(t.tileMs, 3)}`)
        .join(', ')}.`
    : undefined;
  return {
    level: 'info',
    text: on
      ? `Small batches: 2–${sb.maxTokens} tokens (short prompts, draft verification) run the layers' matmuls through the decode kernels (${by})${
          sb.attention === 'flash'
            ? ', attention by flash-decoding over chunks of the cache'
            : sb.attention === 'prefill-kernel'
              ? ', attention by the prefill kernel'
              : ''
        }.`
      : `Small batches: every batch of 2 or more tokens runs the prefill kernels (${by}).`,
    ...(trials ? { detail: trials } : {}),
  };
}

/**
 * A pick's dispatches in short: `argmax ×2`, `candidates + draw`, `top-p ×3 + draw`, `draw`; `CPU` for
 * none (sampled on the CPU).
 * @param passes `SamplerInfo.requests` of one kind of request, in dispatch order.
 */
export function pickPassesText(passes: readonly PickPass[]): string {
  if (!passes.length) return 'CPU';
  const groups: [string, number][] = [];
  for (const p of passes) {
    const name = p.startsWith('argmax_') ? 'argmax' : p.startsWith('top_p_') ? 'top-p' : p;
    const last = groups.at(-1);
    if (last?.[0] === name) last[1]++;
    else groups.push([name, 1]);
  }
  return groups.map(([n, c]) => (c > 1 ? `${n} ×${c}` : n)).join(' + ');
}

/** The argmax reading. */
function argmaxReading(a: ArgmaxInfo): Reading {
  const one = a.stripes === 1;
  const final = a.finalWorkgroups === 1 ? 'one workgroup' : `${a.finalWorkgroups} workgroups`;
  return {
    level: 'info',
    text:
      `Greedy pick: the argmax over ${fmtCount(a.nVocab)} logits in two passes, ` +
      `${one ? 'one stripe' : `${a.stripes} stripes`} of ${fmtCount(a.stripe)} logits (${a.threads} threads per workgroup), ` +
      `then ${final} over ${one ? 'its partial maximum' : `the ${a.stripes} partial maxima`}.`,
  };
}

/** The GPU sampler reading. */
function samplerReading(s: SamplerInfo): Reading {
  const draw = s.passes.find((p) => p.role === 'draw');
  const striped = [
    s.topK.planned ? `top-k candidates (k ≤ ${s.topK.cap})` : undefined,
    s.topP.planned ? 'top-p candidates (3 passes)' : undefined,
  ].filter(Boolean);
  const why = (x: { reason?: string }) => x.reason ?? 'not planned';
  const notPlanned =
    !s.topK.planned && !s.topP.planned && s.topK.reason === s.topP.reason
      ? [`Top-k and top-p candidates not planned: ${why(s.topK)}.`]
      : [
          s.topK.planned ? undefined : `Top-k candidates not planned: ${why(s.topK)}.`,
          s.topP.planned ? undefined : `Top-p candidates not planned: ${why(s.topP)}.`,
        ].filter(Boolean);
  const r = s.requests;
  const perRequest = `Dispatches per token: greedy: ${pickPassesText(r.greedy)}; greedy with a repetition penalty: ${pickPassesText(r.penalty)}; top-k 40: ${pickPassesText(r.topK)}; top-p 0.95: ${pickPassesText(r.topP)}; temperature alone: ${pickPassesText(r.temperature)}.`;
  return {
    level: 'info',
    text:
      `GPU sampler: ${striped.length ? `${striped.join(' and ')} over ${s.stripes} stripes of ${fmtCount(s.stripe)} logits, then ` : ''}` +
      `${draw ? `one ${draw.threads}-thread workgroup` : 'one workgroup'} draws${striped.length ? ' from their list' : ''}` +
      `${s.on === 'cpu' ? ' (not used: this engine samples on the CPU)' : ''}.`,
    detail: [perRequest, ...notPlanned].join(' '),
  };
}

/**
 * The readings of a loaded model's kernels, in the GPU tab's order: prefill matmuls, subgroup matrices,
 * prefill attention, decode attention, decode matmuls, small batches, the argmax, the GPU sampler.
 * @param k our engine's `ModelInfo.kernels` ({@link KernelsInfo}, from `describePlan`).
 */
export function kernelReadings(k: KernelsInfo): Reading[] {
  return [
    ...(k.prefill ? prefillReadings(k.prefill) : []),
    ...(k.attention ? attentionReadings(k.attention) : []),
    decodeReading(k),
    ...(k.smallBatch ? [smallBatchReading(k.smallBatch)] : []),
    ...(k.argmax ? [argmaxReading(k.argmax)] : []),
    ...(k.sampler ? [samplerReading(k.sampler)] : []),
  ];
}

/**
 * True when `kernels` (a `ModelInfo.kernels` of any backend) is our engine's {@link KernelsInfo}: it has
 * the decode kernel and the matmul counts that `describePlan` always writes.
 */
export function isOurKernels(kernels: unknown): kernels is KernelsInfo {
  if (!kernels || typeof kernels !== 'object') return false;
  const k = kernels as Partial<KernelsInfo>;
  return typeof k.decode === 'string' && typeof k.matmuls?.mmv === 'number' && typeof k.fallback === 'string';
}
