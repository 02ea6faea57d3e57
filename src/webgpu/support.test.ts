/**
 * The lists of what the engine runs come from one source (config.ts's SUPPORTED_ARCHITECTURES,
 * kernels/common.ts's WEIGHT_TYPES): the GPU report's reading, the "What fits" note and the README's
 * "What it runs" sentence name exactly those.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { AdapterSnapshot } from '../bench/gpu-report.ts';
import { readReport } from '../bench/gpu-report.ts';
import { fitSupportNote } from '../bench/synthetic.ts';
import { SUPPORTED_ARCHITECTURES } from '../model/config.ts';
import { WEIGHT_TYPES } from './kernels/common.ts';
import { SYNTHETIC_SHAPES } from './model/synthetic.ts';
import { engineSupport, engineSupportSentence, joinAnd } from './support.ts';

describe('what the engine runs', () => {
  it('is config.ts’s architectures and the kernels’ weight types', () => {
    expect(engineSupport()).toEqual({ architectures: SUPPORTED_ARCHITECTURES, weightTypes: WEIGHT_TYPES });
    expect(joinAnd(['a'])).toBe('a');
    expect(joinAnd(['a', 'b', 'c'])).toBe('a, b and c');
    expect(engineSupportSentence({ architectures: ['llama', 'qwen2'], weightTypes: ['F32', 'Q8_0'] })).toBe(
      'Runs GGUF models of the llama and qwen2 architectures with F32 and Q8_0 weights.',
    );
  });

  it('the GPU report and the fit note say it, and the note names the shapes left out', () => {
    const snap: AdapterSnapshot = {
      vendor: 'nvidia',
      architecture: 'hopper',
      device: '',
      description: '',
      isFallbackAdapter: false,
      features: ['shader-f16'],
      limits: {},
    } as unknown as AdapterSnapshot;
    const texts = readReport(snap).readings.map((r) => r.text);
    expect(texts).toContain(`This engine: ${engineSupportSentence()}`);
    for (const a of SUPPORTED_ARCHITECTURES) expect(engineSupportSentence()).toContain(a);
    for (const t of WEIGHT_TYPES) expect(engineSupportSentence()).toContain(t);
    const note = fitSupportNote();
    for (const s of SYNTHETIC_SHAPES) {
      const named = note.includes(`${s.label} (${s.architecture})`);
      expect(named, s.id).toBe(!SUPPORTED_ARCHITECTURES.includes(s.architecture));
    }
  });

  it('the README’s "What it runs" names exactly those architectures and types', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const start = readme.indexOf('What it runs:');
    const end = readme.indexOf('dequantized inside', start);
    expect(start).toBeGreaterThan(0);
    expect(end).toBeGreaterThan(start);
    const text = readme.slice(start, end);
    const archs = [...text.matchAll(/`([a-z0-9]+)`/g)].map((m) => m[1]);
    expect(new Set(archs)).toEqual(new Set(SUPPORTED_ARCHITECTURES));
    // Types as ggml names them; Q4_K_M (a file type) is not matched (no word boundary inside it).
    const types = [...text.matchAll(/\b(BF16|F16|F32|I?Q\d_(?:K|0|1|NL|XS))\b/g)].map((m) => m[1]);
    expect(new Set(types)).toEqual(new Set(WEIGHT_TYPES));
  });
});
