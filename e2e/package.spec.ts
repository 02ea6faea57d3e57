/**
 * The npm package as a site gets it (issue 21): `npm pack` (which runs `prepack`: the library build and
 * the CDN widget build), the tarball installed into a fresh Vite app in a temporary folder, that app
 * type-checked against the package's declarations, built by its own Vite and served by `vite preview`.
 * The app's tsconfig is the vanilla-ts template's with skipLibCheck false, and it compiles README's two
 * marked examples as pasted and a typed widget `done` listener.
 * In Chromium its `<webgpu-chat>` (from `webgpu-llm-bench/widget`) and its own code (the engine API from
 * `webgpu-llm-bench`, and `withOpenAI` from `webgpu-llm-bench/openai` over it) run stories260K greedily,
 * and each shows llama.cpp's text (tests/golden/stories260K.json). The temporary folder is removed afterwards, pass or fail.
 *
 * Slow on purpose (two builds, an install, two model loads on SwiftShader): about a minute here.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { expect, test } from '@playwright/test';
import { stories260kPath } from '../src/testing/models.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const golden = JSON.parse(readFileSync(resolve(ROOT, 'tests/golden/stories260K.json'), 'utf8')) as {
  generation: { cases: { prompt: string; outputText: string; outputIds: number[] }[] };
};
const GOLDEN = golden.generation.cases[0];
const PKG = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { name: string };
const VITE_VERSION = (
  JSON.parse(readFileSync(resolve(ROOT, 'node_modules/vite/package.json'), 'utf8')) as { version: string }
).version;
const TOKENS = 20;

/** A ```ts block of README.md after `<!-- NAME … -->`, as it stands. */
function readmeBlock(name: string): string {
  const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
  const m = new RegExp(`<!-- ${name}[^>]*-->\\s*\`\`\`ts\\n([\\s\\S]*?)\`\`\``).exec(readme);
  if (!m) throw new Error(`README.md has no ${name} block`);
  return m[1];
}

/** The consumer app's files: what a site would write after `npm install webgpu-llm-bench`. */
const APP_FILES: Record<string, string> = {
  'package.json': JSON.stringify(
    { name: 'consumer-app', private: true, type: 'module', scripts: { build: 'vite build' } },
    null,
    2,
  ),
  // `npm create vite@latest -- --template vanilla-ts`'s options, but the package's declarations checked too
  // (skipLibCheck false: they must need no package the site lacks) and no `vite/client` types (the offline
  // fallback below installs no Vite into the app).
  'tsconfig.json': JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      useDefineForClassFields: true,
      module: 'ESNext',
      lib: ['ES2022', 'DOM', 'DOM.Iterable'],
      types: [],
      skipLibCheck: false,
      moduleResolution: 'bundler',
      allowImportingTsExtensions: true,
      verbatimModuleSyntax: true,
      moduleDetection: 'force',
      noEmit: true,
      strict: true,
      noUnusedLocals: true,
      noUnusedParameters: true,
      erasableSyntaxOnly: true,
      noFallthroughCasesInSwitch: true,
      noUncheckedSideEffectImports: true,
    },
    include: ['src'],
  }),
  // README's examples as pasted (type-checked only: index.html loads main.ts alone).
  'src/readme-package.ts': readmeBlock('package-example'),
  'src/readme-openai.ts': readmeBlock('openai-example'),
  'index.html': `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>consumer app</title>
  </head>
  <body>
    <webgpu-chat model="models/stories260K.gguf" temperature="0" max-tokens="${TOKENS}"></webgpu-chat>
    <p>Engine API: <output id="engine-output"></output></p>
    <p>OpenAI-shaped: <output id="openai-output"></output></p>
    <script type="module" src="/src/main.ts"></script>
  </body>
</html>
`,
  'src/main.ts': `import { createEngine, EngineError, type GenerateResult, type TokenEvent } from '${PKG.name}';
import { withOpenAI } from '${PKG.name}/openai';
import '${PKG.name}/widget';

const out = document.querySelector<HTMLOutputElement>('#engine-output')!;
// The widget's events are typed: \`e.detail\` is WebGpuChatDoneDetail.
const chat = document.querySelector('webgpu-chat')!;
chat.addEventListener('done', (e) => {
  chat.dataset.doneText = e.detail.text;
});
const openai = document.querySelector<HTMLOutputElement>('#openai-output')!;
const engine = createEngine();

async function run(): Promise<void> {
  const info = await engine.load({ url: '/models/stories260K.gguf' });
  const onToken = (t: TokenEvent) => {
    out.textContent += t.text;
  };
  const r: GenerateResult = await engine.generate(
    { prompt: ${JSON.stringify(GOLDEN.prompt)}, maxTokens: ${TOKENS}, temperature: 0 },
    onToken,
  );
  out.dataset.ids = r.outputTokenIds.join(',');
  out.dataset.finish = r.finishReason;

  // The OpenAI-shaped wrapper over the same engine (a chat: the model has no template, so the same text).
  const ai = withOpenAI(engine);
  const c = await ai.chat.completions.create({
    messages: [{ role: 'user', content: ${JSON.stringify(GOLDEN.prompt)} }],
    max_tokens: ${TOKENS},
    temperature: 0,
  });
  openai.textContent = c.choices[0].message.content;
  openai.dataset.finish = c.choices[0].finish_reason;
  openai.dataset.tokens = String(c.usage.completion_tokens);
  // Wrapped after the load (as the README's example): the objects name the loaded model.
  openai.dataset.model = c.model;
  openai.dataset.loaded = info.name;
  await engine.terminate();
}

run().catch((e: unknown) => {
  out.dataset.error = e instanceof EngineError ? \`\${e.code}: \${e.message}\` : String(e);
});
`,
};

let tmp = '';
let packed = false;
let tarballBytes = 0;
let preview: ChildProcess | undefined;
let baseUrl = '';

/** A free TCP port on localhost. */
function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (a && typeof a === 'object' ? ok(a.port) : fail(new Error('no port'))));
    });
  });
}

function run(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 300_000,
  });
}

test.describe.configure({ mode: 'serial', timeout: 120_000 });

test.beforeAll(async () => {
  test.setTimeout(480_000);
  const model = stories260kPath();
  tmp = mkdtempSync(join(tmpdir(), 'webgpu-llm-pkg-'));
  // npm pack runs prepack (build:lib + build:widget) in the repository.
  run('npm', ['pack', '--pack-destination', tmp, '--no-audit', '--no-fund'], ROOT);
  const tarball = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error(`npm pack wrote no tarball into ${tmp}`);
  packed = true;
  tarballBytes = statSync(join(tmp, tarball)).size;

  const app = join(tmp, 'app');
  for (const [file, text] of Object.entries(APP_FILES)) {
    mkdirSync(dirname(join(app, file)), { recursive: true });
    writeFileSync(join(app, file), text);
  }
  mkdirSync(join(app, 'public/models'), { recursive: true });
  copyFileSync(model, join(app, 'public/models/stories260K.gguf'));

  // The package and this repository's Vite version, from npm's cache when it has them.
  const install = ['install', '--prefer-offline', '--no-audit', '--no-fund', '--no-save'];
  let vite = join(app, 'node_modules/vite/bin/vite.js');
  try {
    run('npm', [...install, join(tmp, tarball), `vite@${VITE_VERSION}`], app);
  } catch (e) {
    // Offline with an empty cache: the package alone (it has no dependencies), built by this repo's Vite.
    console.warn(`npm could not install vite@${VITE_VERSION}; using the repository's: ${String(e)}`);
    run('npm', [...install, '--offline', join(tmp, tarball)], app);
    vite = join(ROOT, 'node_modules/vite/bin/vite.js');
  }
  // The package's own types resolve through its `exports` (a wrong name or a missing .d.ts fails here).
  run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.'], app);
  run(process.execPath, [vite, 'build'], app);

  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  preview = spawn(
    process.execPath,
    [vite, 'preview', '--port', String(port), '--strictPort', '--host', '127.0.0.1'],
    {
      cwd: app,
      stdio: 'ignore',
    },
  );
  const until = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(baseUrl)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`vite preview did not answer at ${baseUrl}`);
    await new Promise((r) => setTimeout(r, 250));
  }
});

test.afterAll(() => {
  preview?.kill();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test('the packed package in a fresh Vite app: <webgpu-chat>, the engine API and withOpenAI give the greedy text', async ({
  page,
}) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${baseUrl}/`);

  // The engine API, from the app's own code.
  const out = page.locator('#engine-output');
  await page.waitForSelector('#engine-output[data-finish], #engine-output[data-error]', { timeout: 90_000 });
  expect(await out.getAttribute('data-error')).toBeNull();
  await expect(out).toHaveAttribute('data-finish', 'length');
  expect(await out.getAttribute('data-ids')).toBe(GOLDEN.outputIds.slice(0, TOKENS).join(','));
  const engineText = (await out.textContent()) ?? '';
  expect(engineText.length).toBeGreaterThanOrEqual(60);
  expect(GOLDEN.outputText.startsWith(engineText), `"${engineText}" should start llama.cpp's text`).toBe(
    true,
  );

  // withOpenAI over the same engine, wrapped after its load: the same greedy text (a chat of a model
  // without a template, its first word's space dropped), and the loaded model's name as `model`.
  const openai = page.locator('#openai-output');
  await expect(openai).toHaveAttribute('data-finish', 'length', { timeout: 60_000 });
  await expect(openai).toHaveAttribute('data-tokens', String(TOKENS));
  const openaiText = (await openai.textContent()) ?? '';
  expect(openaiText).toBe(engineText.replace(/^ /, ''));
  const loaded = await openai.getAttribute('data-loaded');
  expect(loaded).toBeTruthy();
  await expect(openai).toHaveAttribute('data-model', loaded as string);
  expect(loaded).not.toBe('unknown');

  // The widget, registered by `import 'webgpu-llm-bench/widget'`.
  const chat = page.locator('webgpu-chat');
  await expect(chat).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(chat.getByRole('heading')).toHaveText('Chat with stories260K');
  const input = chat.getByLabel('Message');
  await input.fill(GOLDEN.prompt);
  await input.press('Enter');
  const answer = chat.locator('[data-role="assistant"]').last();
  await expect(answer).toHaveAttribute('data-finish', 'length', { timeout: 60_000 });
  const widgetText = (await answer.locator('.msg__body').textContent()) ?? '';
  expect(widgetText.length).toBeGreaterThanOrEqual(60);
  expect(GOLDEN.outputText.startsWith(widgetText), `"${widgetText}" should start llama.cpp's text`).toBe(
    true,
  );
  // The app's typed `done` listener saw the same text.
  await expect(chat).toHaveAttribute('data-done-text', widgetText);
  expect(errors).toEqual([]);
});

test("the README's size of the CDN single file is the built one's (within 5%)", () => {
  test.skip(!packed, 'npm pack did not run');
  // prepack has just built dist/widget/; the README gives `webgpu-chat.js NNN kB, MMM kB gzipped`.
  const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
  const m = /`webgpu-chat\.js` (\d+) kB, (\d+) kB gzipped/.exec(readme);
  if (!m) throw new Error('README.md does not give the size of webgpu-chat.js');
  const file = readFileSync(resolve(ROOT, 'dist/widget/webgpu-chat.js'));
  const kB = file.length / 1000;
  const gzKB = gzipSync(file).length / 1000;
  expect(Math.abs(Number(m[1]) - kB) / kB, `README ${m[1]} kB, built ${kB.toFixed(1)} kB`).toBeLessThan(0.05);
  expect(
    Math.abs(Number(m[2]) - gzKB) / gzKB,
    `README ${m[2]} kB gzipped, built ${gzKB.toFixed(1)} kB`,
  ).toBeLessThan(0.05);
});

test("the README's tarball size is the packed one's (within 5%)", () => {
  test.skip(!packed, 'npm pack did not run');
  const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
  const m = /The tarball is about (\d+) kB/.exec(readme);
  if (!m) throw new Error('README.md does not give the size of the tarball');
  const kB = tarballBytes / 1000;
  expect(Math.abs(Number(m[1]) - kB) / kB, `README ${m[1]} kB, packed ${kB.toFixed(1)} kB`).toBeLessThan(
    0.05,
  );
});
