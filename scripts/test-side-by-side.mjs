#!/usr/bin/env node
/**
 * `npm test`'s middle phase: the unit tests and the end-to-end tests at once, each line of their output
 * tagged `[unit]` or `[e2e]`, then a line per phase with its exit status and minutes.
 *
 * Why: on a 2-core CI machine neither phase keeps both cores busy. The unit tests run one file at a time
 * (Vitest's one worker there), the slow ones waiting on a child Chromium or Dawn that runs SwiftShader on
 * about one core; the end-to-end tests run one at a time in one Chromium. Side by side they fill the two
 * cores, as the browser tests' two processes do (scripts/test-browser.mjs). Their timeouts leave room for
 * the shared machine (vitest.config.ts, playwright.config.ts).
 *
 * The page must be built first (`npm run build:e2e`): the unit tests' `bench` builds only into
 * `dist/bench/`, which the end-to-end tests' `vite build` would empty if it ran during them.
 *
 * Usage: node scripts/test-side-by-side.mjs
 * Exit status: 0 when both passed, else the unit tests' status if they failed, else the end-to-end tests'.
 */
import { runTagged } from './tagged-run.mjs';

const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';
const phases = [
  { tag: 'unit', args: ['vitest', 'run', '--project', 'unit'] },
  { tag: 'e2e', args: ['playwright', 'test'] },
];

const results = await Promise.all(
  phases.map(async ({ tag, args }) => {
    const t0 = performance.now();
    const status = await runTagged(`[${tag}] `, npx, args);
    const min = ((performance.now() - t0) / 60_000).toFixed(1);
    console.log(`[${tag}] ${status === 0 ? 'passed' : `FAILED (exit ${status})`} in ${min} min`);
    return status;
  }),
);
process.exit(results.find((c) => c !== 0) ?? 0);
