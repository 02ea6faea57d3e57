/** Hand-made benchmark results for the page's unit tests (not shipped: only tests import this). */

import { summarizeRuns } from '../bench/runner.ts';
import type { BenchResult, BenchRun } from '../bench/types.ts';

export function sampleRun(over: Partial<BenchRun> = {}): BenchRun {
  return {
    prompt: 'Once upon a time',
    promptName: 'custom',
    promptTokens: 5,
    outputTokens: 4,
    outputTokenIds: [432, 383, 286, 261],
    text: ', there was a',
    ttftMs: 12.5,
    itlMs: [3.25, 3.5, 3.125],
    tpotMs: 3.2916666666666665,
    e2eMs: 22.375,
    prefillTokensPerSecond: 400,
    decodeTokensPerSecond: 303.79746835443035,
    ...over,
  };
}

export function sampleResult(over: Partial<BenchResult> = {}): BenchResult {
  const runs = over.runs ?? [
    sampleRun(),
    sampleRun({
      prompt: 'He said, "hi"\nand left, quickly.',
      promptName: 'tricky',
      text: ' "quoted", commas,\r\nnewlines\tand tabs ',
      ttftMs: 0.1 + 0.2,
      itlMs: [1e-7, 123456789.125, 0],
      tpotMs: 41152263.083333336,
      e2eMs: 123456789.42500001,
      prefillTokensPerSecond: 16666.666666666668,
      decodeTokensPerSecond: 2.43e-5,
      engineReported: { decode_tokens_per_s: 99.5 },
    }),
    sampleRun({
      prompt: 'One token',
      promptName: 'one',
      outputTokens: 1,
      outputTokenIds: [13],
      text: '\n',
      itlMs: [],
      tpotMs: Number.NaN,
      e2eMs: 12.5,
      decodeTokensPerSecond: Number.NaN,
    }),
  ];
  return {
    schemaVersion: 1,
    createdAt: '2025-01-02T03:04:05.678Z',
    device: {
      vendor: 'google',
      architecture: 'swiftshader',
      device: '',
      description: 'SwiftShader Device (Subzero)',
      isFallbackAdapter: true,
      features: ['subgroups', 'timestamp-query'],
      limits: { maxBufferSize: 268435456, maxStorageBufferBindingSize: 134217728 },
      userAgent: 'Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/140.0.0.0',
      fingerprint: '0123456789abcdef',
      label: 'SwiftShader Device (Subzero) (software)',
    },
    engine: 'webgpu',
    model: {
      id: 'stories260K',
      architecture: 'llama',
      quantization: 'F32',
      parameters: 292160,
      bytes: 1185376,
    },
    load: { totalMs: 150.5, downloadMs: 20.25, uploadMs: 30, compileMs: 100.25 },
    plan: {
      prompts: [{ name: 'custom', text: 'Once upon a time' }],
      maxTokens: 4,
      runs: 3,
      warmup: 1,
      ignoreEos: true,
    },
    runs,
    summary: summarizeRuns(runs),
    roofline: { bandwidthGBs: 12.5, bytesPerToken: 1168640, fraction: 0.0284, matmulGflops: 40.5 },
    ...over,
  };
}
