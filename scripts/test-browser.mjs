#!/usr/bin/env node
/**
 * `npm run test:browser`: the browser tests (Vitest's `browser` project) in N Vitest processes at once,
 * each with its own headless Chromium, over disjoint sets of test files balanced by how long each file
 * takes (longest first, each to the least loaded process).
 *
 * Why: on a software adapter a Chromium runs WebGPU (SwiftShader: shader compilation and compute) on
 * about one core, so the suite run file after file left the second core of a 2-core CI machine idle.
 * Measured 2026-12-03 on such a machine: two test files in two processes took 49 s of wall time against
 * 63 s one after the other, each file as fast as alone.
 *
 * Usage: node scripts/test-browser.mjs [--jobs N] [vitest arguments…]
 *   --jobs N   processes (default 2, or 1 on a 1-core machine; $BROWSER_TEST_JOBS sets it too). Files
 *              named on the command line run in one process.
 * Exit status: 0 when every process passed, else the first non-zero status.
 */
import { readdirSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { runTagged } from './tagged-run.mjs';

/**
 * Seconds each file's tests took in CI with two processes on a 2-core machine (the clean-clone run of
 * 2026-12-07, commit eb78c1d; files under 15 s left out; quality.browser.test.ts less the 266 s its
 * matvec-layout test no longer takes): only the order and the balance use them. Files not listed count
 * as {@link DEFAULT_SECONDS}.
 */
const SECONDS = {
  'src/webgpu/model/quality.browser.test.ts': 436,
  'src/webgpu/kernels/attention.browser.test.ts': 353,
  'src/webgpu/engine.browser.test.ts': 311,
  'src/webgpu/model/llama.browser.test.ts': 307,
  'src/webgpu/kernels/sgmat-check.browser.test.ts': 280,
  'src/webgpu/model/gemma.browser.test.ts': 265,
  'src/webgpu/model/prefill-kernels.browser.test.ts': 238,
  'src/webgpu/kernels/mmv.browser.test.ts': 221,
  'src/webgpu/kernels/mmm.browser.test.ts': 193,
  'src/webgpu/kernels/mmv-kquants.browser.test.ts': 178,
  'src/webgpu/model/sgmat-model.browser.test.ts': 145,
  'src/webgpu/model/phi3.browser.test.ts': 131,
  'src/webgpu/engine-draft.browser.test.ts': 128,
  'src/webgpu/device-lost.browser.test.ts': 128,
  'src/webgpu/kernels/sample.browser.test.ts': 121,
  'src/webgpu/model/kv-quant.browser.test.ts': 96,
  'src/webgpu/model/verify.browser.test.ts': 89,
  'src/webgpu/engine-speculative.browser.test.ts': 69,
  'src/webgpu/kernels/attention-sgmat.browser.test.ts': 67,
  'src/webgpu/decoder.browser.test.ts': 64,
  'src/webgpu/kernels/quant.browser.test.ts': 60,
  'src/webgpu/model/small-batch.browser.test.ts': 58,
  'src/webgpu/engine-grammar.browser.test.ts': 54,
  'src/webgpu/model/sample-passes.browser.test.ts': 51,
  'src/webgpu/chat.browser.test.ts': 47,
  'src/webgpu/engine-small-batch.browser.test.ts': 46,
  'src/webgpu/model/sample-top-p.browser.test.ts': 42,
  'src/webgpu/model/sgmat-attention.browser.test.ts': 39,
  'src/webgpu/model/decode-int8.browser.test.ts': 33,
  'src/webgpu/worker-api.browser.test.ts': 30,
  'src/webgpu/model/prefill.browser.test.ts': 30,
  'src/webgpu/engine-sampling.browser.test.ts': 24,
  'src/library/library.browser.test.ts': 20,
  'src/bench/llama-bench.browser.test.ts': 19,
  'src/webgpu/non-finite.browser.test.ts': 18,
  'src/webgpu/contract.browser.test.ts': 16,
  'src/webgpu/worker-prefill.browser.test.ts': 15,
  'src/core/openai.browser.test.ts': 15,
};
const DEFAULT_SECONDS = 12;

function browserTestFiles(dir = 'src') {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...browserTestFiles(p));
    else if (name.endsWith('.browser.test.ts')) out.push(relative('.', p));
  }
  return out;
}

const args = process.argv.slice(2);
let jobs = Number(process.env.BROWSER_TEST_JOBS) || Math.max(1, Math.min(2, availableParallelism()));
const j = args.indexOf('--jobs');
if (j >= 0) {
  jobs = Number(args[j + 1]);
  args.splice(j, 2);
  if (!Number.isInteger(jobs) || jobs < 1) {
    console.error('--jobs needs a whole number ≥ 1');
    process.exit(2);
  }
}
const named = args.some((a) => !a.startsWith('-') && /\.test\.ts$/.test(a));
const files = browserTestFiles().sort();
const groups = Array.from({ length: named ? 1 : Math.min(jobs, files.length) }, () => ({ s: 0, files: [] }));
if (!named) {
  for (const f of [...files].sort(
    (a, b) => (SECONDS[b] ?? DEFAULT_SECONDS) - (SECONDS[a] ?? DEFAULT_SECONDS),
  )) {
    const g = groups.reduce((m, x) => (x.s < m.s ? x : m));
    g.s += SECONDS[f] ?? DEFAULT_SECONDS;
    g.files.push(f);
  }
}

const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';
const results = await Promise.all(
  groups.map((g, i) => {
    const tag = groups.length > 1 ? `[browser ${i + 1}/${groups.length}] ` : '';
    if (tag) console.log(`${tag}${g.files.length} files, ~${Math.round(g.s / 60)} min: ${g.files.join(' ')}`);
    return runTagged(tag, npx, ['vitest', 'run', '--project', 'browser', ...g.files, ...args]);
  }),
);
process.exit(results.find((c) => c !== 0) ?? 0);
