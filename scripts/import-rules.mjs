#!/usr/bin/env node
/**
 * The folder layout of src/ and what each folder's production code may import, written into biome.json as
 * `noRestrictedImports` overrides, so that a wrong import fails `npm run lint` (issue 20).
 *
 *   node scripts/import-rules.mjs           rewrite biome.json's layout overrides from LAYERS below
 *   node scripts/import-rules.mjs --check   exit 1 when biome.json's overrides differ from LAYERS
 *
 * Tests (`*.test.ts`, `*.browser.test.ts`, `*.test-d.ts`) may import anything: they compare backends and
 * layers with each other. Biome matches import specifiers, not resolved paths, so each folder gets one
 * override per nesting depth it has (`../X/**` from src/F/a.ts, `../../X/**` from src/F/sub/a.ts); a new
 * subfolder or folder makes `--check` (run by `npm run lint`) fail until this is rerun.
 * `src/core` also type-checks without DOM or Node types (`tsconfig.core.json`, run by `npm run typecheck`).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Each folder of src/, what it holds, and the folders its production code may import (`workers` is the
 * top-level workers/ folder; `root` the files directly in src/).
 */
export const LAYERS = {
  util: { holds: 'pure helpers with no imports: the seeded PRNG, number formatting, HTML escaping', may: [] },
  dom: { holds: 'the one DOM helper, h(), shared by the page and the widget', may: [] },
  core: {
    holds:
      'the Engine API every backend implements: request/result types, EngineError, validation, the vLLM metric definitions, the engine worker API, the OpenAI-shaped wrapper',
    may: ['util'],
  },
  net: {
    holds: 'byte sources: URL range requests with status, timeout and abort handling; Blob; Node path',
    may: ['core', 'util'],
  },
  gguf: {
    holds: "the GGUF format: reader, writer, ggml block types, llama.cpp's quantizer, split files",
    may: ['core', 'net', 'util'],
  },
  model: {
    holds:
      'what a model is, without a GPU: config from GGUF metadata, tokenizers, chat templates, the float64 reference forward pass, random-weight model builders',
    may: ['core', 'gguf', 'util'],
  },
  library: {
    holds:
      'the model library: model specs, OPFS/file stores, resumable verified downloads, opening any source',
    may: ['core', 'gguf', 'net', 'util'],
  },
  webgpu: {
    holds:
      'our engine: device, WGSL kernels, the forward pass, WebGpuEngine (given a model opener: it knows no library), its worker host',
    may: ['core', 'gguf', 'model', 'util'],
  },
  remote: { holds: 'the OpenAI-compatible server backend (vLLM)', may: ['core', 'util'] },
  webllm: { holds: 'the WebLLM backend', may: ['core', 'util'] },
  wllama: {
    holds: "the wllama backend: llama.cpp's wasm build on the CPU, its memory and file limits",
    may: ['core', 'gguf', 'library', 'model', 'net', 'util'],
  },
  bench: {
    holds:
      'benchmarks over any backend: runner, plans, prompts, results and their files, history store, llama-bench, roofline, device fingerprint and GPU report data',
    may: [
      'core',
      'util',
      'net',
      'gguf',
      'model',
      'library',
      'webgpu',
      'remote',
      'webllm',
      'wllama',
      'workers',
    ],
  },
  chat: {
    holds: "one chat conversation and its log, shared by the page's Chat tab and the <webgpu-chat> widget",
    may: ['core', 'util', 'dom'],
  },
  widget: {
    holds: 'the <webgpu-chat> element',
    may: ['core', 'util', 'dom', 'chat', 'workers', 'wllama'],
  },
  ui: {
    holds: 'the benchmark page: DOM only',
    may: [
      'core',
      'util',
      'dom',
      'chat',
      'net',
      'gguf',
      'model',
      'library',
      'webgpu',
      'remote',
      'webllm',
      'wllama',
      'bench',
      'workers',
    ],
  },
  cli: {
    holds: 'command-line tools and the headless harness (Node)',
    // testing: the bench command's default model is the test model, found where the tests find it.
    may: [
      'core',
      'util',
      'net',
      'gguf',
      'model',
      'library',
      'webgpu',
      'remote',
      'bench',
      'testing',
      'workers',
    ],
  },
  testing: { holds: 'test support: model finders, test servers, shared cases', may: ['*'] },
  root: {
    holds: "the npm package's entry (src/index.ts) and createEngine's backend choice (src/auto-engine.ts)",
    may: ['core', 'workers', 'wllama'],
  },
};

const TEST_FILES = ['!**/*.test.ts', '!**/*.test-d.ts'];

/** How deep src/`folder` nests its .ts files (1: src/F/a.ts only; 2: also src/F/sub/a.ts; ...). */
function depthOf(folder) {
  const walk = (dir, d) =>
    readdirSync(dir, { withFileTypes: true }).reduce(
      (m, e) =>
        Math.max(m, e.isDirectory() ? walk(join(dir, e.name), d + 1) : e.name.endsWith('.ts') ? d : 0),
      0,
    );
  return walk(join(ROOT, 'src', folder), 1);
}

/** The biome overrides for LAYERS. */
export function layoutOverrides() {
  const out = [];
  for (const [folder, { may }] of Object.entries(LAYERS)) {
    if (may.includes('*')) continue;
    const depths = folder === 'root' ? [0] : Array.from({ length: depthOf(folder) }, (_, i) => i + 1);
    for (const depth of depths) {
      const up = depth === 0 ? './' : '../'.repeat(depth);
      const file = folder === 'root' ? 'src/*.ts' : `src/${folder}/${'*/'.repeat(depth - 1)}*.ts`;
      // `${up}X/**` names src/X; `${top}X/**` names a top-level folder (workers/, tests/).
      const top = depth === 0 ? '../' : `${up}../`;
      const group = [`${up}*/**`, `${top}*/**`];
      for (const m of may) group.push(m === 'workers' ? `!${top}workers/**` : `!${up}${m}/**`);
      const allowed = may.length ? may.join(', ') : 'nothing';
      out.push({
        includes: [file, ...TEST_FILES],
        linter: {
          rules: {
            style: {
              noRestrictedImports: {
                level: 'error',
                options: {
                  patterns: [
                    {
                      group,
                      message: `src/${folder === 'root' ? '' : `${folder}/`} may import only ${allowed} (the layout in scripts/import-rules.mjs and README "Architecture")`,
                    },
                  ],
                },
              },
            },
          },
        },
      });
    }
  }
  return out;
}

/** One header per folder: src/F/README.md, what it holds and what it may import. */
function folderReadme(folder) {
  const { holds, may } = LAYERS[folder];
  const allowed = may.includes('*')
    ? 'anything'
    : may.length
      ? may.map((m) => `\`${m}/\``).join(', ')
      : 'nothing';
  return `# src/${folder}/\n\n${holds[0].toUpperCase()}${holds.slice(1)}.\n\nIts production code may import: ${allowed} (enforced by \`npm run lint\`; the table is in scripts/import-rules.mjs).\n`;
}

const MARK = 'src/'; // every layout override includes a src/ glob first; others are kept as they are
const path = join(ROOT, 'biome.json');
const config = JSON.parse(readFileSync(path, 'utf8'));
const others = (config.overrides ?? []).filter((o) => !String(o.includes?.[0] ?? '').startsWith(MARK));
const want = [...others, ...layoutOverrides()];
const readmes = Object.keys(LAYERS)
  .filter((f) => f !== 'root')
  .map((f) => [join(ROOT, 'src', f, 'README.md'), folderReadme(f)]);
const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true }).filter((e) => e.isDirectory());
const unlisted = folders.map((e) => e.name).filter((f) => !(f in LAYERS));
if (unlisted.length) {
  console.error(`src/${unlisted.join(', src/')}: not in scripts/import-rules.mjs's LAYERS; add it there`);
  process.exit(1);
}
if (process.argv.includes('--check')) {
  const stale = readmes.filter(([p, text]) => {
    try {
      return readFileSync(p, 'utf8') !== text;
    } catch {
      return true;
    }
  });
  if (JSON.stringify(config.overrides ?? []) !== JSON.stringify(want) || stale.length) {
    console.error(
      'biome.json or a src/*/README.md differs from scripts/import-rules.mjs; run node scripts/import-rules.mjs',
    );
    process.exit(1);
  }
} else {
  config.overrides = want;
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`);
  for (const [p, text] of readmes) writeFileSync(p, text);
}
