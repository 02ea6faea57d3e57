/**
 * `npm run bench`'s progress lines: what the benchmark page reports (device, load, runs, roofline,
 * warnings, llama-bench tests) as one line each.
 */
import type { BenchEvent } from '../bench/page-api.ts';
import { fmtBytes, fmtPct, fmtSig } from '../util/format.ts';
import { llamaBenchEventLine } from './llama-bench-args.ts';
import { loadProgressLogger } from './load-progress.ts';
import { contextNote } from './timings.ts';

/**
 * Turns the page's progress events into `bench:` lines for `log` (stderr; load progress: one line per
 * 500 ms with every phase's state). `askedCtx`: --ctx, said when the model's training context cut it.
 */
export function progressPrinter(log: (line: string) => void, askedCtx?: number): (e: BenchEvent) => void {
  const loadProgress = loadProgressLogger(log);
  return (e) => {
    switch (e.type) {
      case 'device': {
        const d = e.device;
        const sw =
          d.isFallbackAdapter ||
          /swiftshader|llvmpipe|lavapipe/i.test(`${d.vendor} ${d.architecture} ${d.description}`);
        log(`device: ${d.label ?? d.description} [${d.fingerprint}]${sw ? ' — software adapter (CPU)' : ''}`);
        break;
      }
      case 'load-start':
        log(`loading ${e.modelId}`);
        break;
      case 'load-progress':
        loadProgress(e.progress);
        break;
      case 'loaded':
        // wllama (the CPU) reads the file and loads it into wasm memory: no GPU upload, no shaders.
        log(
          `loaded ${e.model.id}: ${e.info.nLayers} layers, ${e.model.quantization}, ${fmtBytes(e.model.bytes)} in ${fmtSig(e.load.totalMs)} ms ${
            e.info.backend === 'wllama'
              ? `(fetch ${fmtSig(e.load.downloadMs)}, load into wasm ${fmtSig(e.load.uploadMs)})`
              : `(download ${fmtSig(e.load.downloadMs)}, upload ${fmtSig(e.load.uploadMs)}, compile ${fmtSig(e.load.compileMs)})`
          }`,
        );
        {
          const cut = contextNote(askedCtx, e.info.contextLength);
          if (cut) log(cut);
        }
        break;
      case 'run-start':
        break;
      case 'run-done': {
        const r = e.run;
        log(
          `${e.baseline ? 'baseline (no drafting) ' : ''}${e.warmup ? 'warm-up' : 'run'} ${e.index + 1}/${e.total} [${r.promptName}] ${r.promptTokens} → ${r.outputTokens} tokens: TTFT ${fmtSig(r.ttftMs)} ms, decode ${fmtSig(r.decodeTokensPerSecond)} tok/s, E2E ${fmtSig(r.e2eMs)} ms`,
        );
        break;
      }
      case 'roofline-start':
        log('roofline: measuring memory bandwidth and matmul throughput…');
        break;
      case 'roofline-done':
        log(
          `roofline: bandwidth ${fmtSig(e.bandwidth.GBs)} GB/s (${fmtBytes(e.bandwidth.bytes)} × ${e.bandwidth.launches}, ${e.bandwidth.timing}, checksum ok), matmul ${fmtSig(e.matmul.GFLOPs)} GFLOP/s (n=${e.matmul.n}, ${e.matmul.timing}); decode at ${fmtPct(e.roofline.fraction)} of bandwidth`,
        );
        break;
      case 'warning':
        log(`warning: ${e.message}`);
        break;
      default: {
        const line = llamaBenchEventLine(e);
        if (line) log(line);
      }
    }
  };
}
