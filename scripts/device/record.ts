/**
 * Records one device run (scripts/device/run.sh) into BENCHMARKS.md: the folder the device tool brought
 * back (`files_at`: summary.md, results.tar, log.txt) becomes a section between
 * `<!-- bench:device DATE -->` and `<!-- /bench:device DATE -->` (replacing that date's section), with the
 * run's provenance (commit of the carried bundles, GPU and driver from nvidia-smi, the adapter Dawn saw),
 * the open GPU issues' goals read off the JSON (goals.ts) and every phase's table.
 *
 *   npm run device:record -- DIR [--date YYYY-MM-DD] [--no-write] [--allow-software] [--file BENCHMARKS.md]
 *
 * A run on a software adapter (a DRY=1 rehearsal) is printed but not written unless --allow-software:
 * BENCHMARKS.md's GPU sections hold GPU figures. Exit 0 when written or with --no-write; 2 for a folder
 * without results or a software adapter's run not written.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { softwareReasons } from '../../src/bench/gpu-report.ts';
import { writeBenchSection } from '../bench-common.ts';
import { type CompareJson, type DraftJson, deviceGoals, goalsTable, type ProfileJson } from './goals.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    date: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    'allow-software': { type: 'boolean', default: false },
    file: { type: 'string' },
  },
});
const dir = positionals[0];
if (!dir || !existsSync(dir)) {
  console.error('usage: npm run device:record -- DIR (the folder with summary.md, results.tar, log.txt)');
  process.exit(2);
}

// The phases' files: results.tar unpacked into a temporary folder, or already beside summary.md.
const tmp = mkdtempSync(join(tmpdir(), 'device-record-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));
const tarPath = join(dir, 'results.tar');
const filesDir = existsSync(tarPath) ? tmp : dir;
if (existsSync(tarPath)) execFileSync('tar', ['-C', tmp, '-xf', resolve(tarPath)]);
const readJson = <T>(name: string): T | undefined => {
  const p = join(filesDir, name);
  return existsSync(p) ? (JSON.parse(readFileSync(p, 'utf8')) as T) : undefined;
};
const compare = readJson<CompareJson & { date?: string; adapter?: Adapter; runtime?: string }>(
  'compare.json',
);
const profile = readJson<ProfileJson & { adapter?: Adapter }>('profile.json');
const draft = readJson<DraftJson & { adapter?: Adapter }>('draft.json');
const small = readJson<{ adapter?: Adapter }>('small.json');
const summaryPath = join(dir, 'summary.md');
const summary = existsSync(summaryPath) ? readFileSync(summaryPath, 'utf8') : '';
if (!compare && !profile && !draft && !small) {
  console.error(
    `${dir}: no phase results (results.tar or compare/profile/draft/small .json)${summary ? `; summary.md says:\n${summary}` : ''}`,
  );
  process.exit(2);
}

interface Adapter {
  vendor: string;
  architecture: string;
  device?: string;
  description?: string;
  isFallback?: boolean;
}
const adapter = compare?.adapter ?? profile?.adapter ?? draft?.adapter ?? small?.adapter;
// The page's own test for a software adapter (gpu-report.ts: the fallback flag, or a rasterizer's name).
const software =
  !adapter ||
  softwareReasons({
    vendor: adapter.vendor,
    architecture: adapter.architecture,
    device: adapter.device ?? '',
    description: adapter.description ?? '',
    isFallbackAdapter: Boolean(adapter.isFallback),
    features: [],
    limits: {},
  }).length > 0;

// Provenance from the log: the carried bundles' commit, nvidia-smi's CSV line, the phases asked for.
const logPath = join(dir, 'log.txt');
const log = existsSync(logPath) ? readFileSync(logPath, 'utf8') : '';
const commit = /app commit ([0-9a-f]{7,40})( \(with uncommitted changes\))?/.exec(log);
const smiHeader = log.split('\n').findIndex((l) => l.startsWith('name, driver_version'));
const smi = smiHeader >= 0 ? log.split('\n')[smiHeader + 1]?.trim() : undefined;
const gpuName =
  smi?.split(',')[0]?.trim() || (adapter ? `${adapter.vendor} ${adapter.architecture}` : 'unknown GPU');
const date = values.date ?? compare?.date?.slice(0, 10) ?? new Date().toISOString().slice(0, 10);

const provenance = [
  `Recorded by \`npm run device:record\` from one \`scripts/device/run.sh\` run on a lent machine`,
  commit
    ? `bundles of commit ${commit[1].slice(0, 7)}${commit[2] ? ' with uncommitted changes' : ''}`
    : 'commit unknown',
  smi ? `nvidia-smi: ${smi}` : 'no nvidia-smi line in the log',
  adapter
    ? `adapter ${adapter.vendor} / ${adapter.architecture}${adapter.description ? ` (${adapter.description})` : ''}${software ? ', a SOFTWARE adapter: not GPU figures' : ''}`
    : 'adapter unknown',
  compare?.runtime ? `runtime ${compare.runtime}` : '',
  "peer: llama.cpp's Vulkan backend (node-llama-cpp's prebuilt build) on the same GGUF files",
]
  .filter(Boolean)
  .join('; ');
// The deep decode test's depth: the deepest any compare row ran (run.sh's DEPTHS: 4096 on the GPU).
const rowDepths = (compare?.rows ?? []).flatMap((r) => (r as { depths?: number[] }).depths ?? []);
const deepest = rowDepths.length ? Math.max(...rowDepths) : 4096;
// summary.md's "## phase" headings become level 4 under this section's own.
const tables = summary.replace(/^## /gm, '#### ').trim();
const text = [
  `<!-- bench:device ${date} -->`,
  `## ${date}: ${gpuName} (Node + Dawn + Vulkan), one device run beside llama.cpp Vulkan`,
  '',
  `${provenance}.`,
  '',
  '### Goals of the open GPU issues (40 decode, 41 prefill, 45 speculative decoding)',
  '',
  goalsTable(deviceGoals({ compare, profile, draft }, deepest)),
  '',
  '### Every phase',
  '',
  tables,
  '',
  `<!-- /bench:device ${date} -->`,
].join('\n');

console.log(text);
if (values['no-write']) {
  console.error('not written (--no-write)');
  process.exit(0);
}
if (software && !values['allow-software']) {
  console.error('not written: a software adapter (a DRY=1 rehearsal?); --allow-software writes it anyway');
  process.exit(2);
}
writeBenchSection('device', date, text, undefined, values.file ? resolve(values.file) : undefined);
console.error(`written into ${values.file ?? 'BENCHMARKS.md'} as <!-- bench:device ${date} -->`);
