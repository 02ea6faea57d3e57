/**
 * The widget with WebGPU switched off in Chromium (`--disable-webgpu`, no `--enable-unsafe-webgpu`):
 * `engine="auto"` picks llama.cpp's wasm build (wllama) by itself, says why, and answers stories260K with
 * llama.cpp's greedy text; screenshots at 1280×800 and 390×844. wllama's wasm is the installed package's,
 * served to the page by `page.route` (`wllama-wasm` attribute), so nothing comes from the network.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, type Page, type TestInfo, test } from '@playwright/test';
import { chromiumArgs, resolveChromium } from '../src/cli/browser.ts';
import { stories260kPath } from '../src/testing/models.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const WASM = resolve(ROOT, 'node_modules/@wllama/wllama/esm/wasm/wllama.wasm');
const golden = JSON.parse(readFileSync(resolve(ROOT, 'tests/golden/stories260K.json'), 'utf8')) as {
  generation: { cases: { prompt: string; outputText: string }[] };
};
const GOLDEN = golden.generation.cases[0];

test.use({
  launchOptions: { executablePath: resolveChromium().path, args: chromiumArgs({ disableWebGPU: true }) },
});
test.describe.configure({ timeout: 90_000 });

async function shoot(p: Page, testInfo: TestInfo, name: string): Promise<void> {
  const dir = process.env.SCREENSHOT_DIR;
  await p.screenshot({ path: dir ? resolve(dir, `${name}.png`) : testInfo.outputPath(`${name}.png`) });
}

test('without WebGPU, engine="auto" answers through wllama with llama.cpp\'s greedy text', async ({
  page: p,
}, testInfo) => {
  const errors: string[] = [];
  p.on('pageerror', (e) => errors.push(String(e)));
  await p.route('**/models/stories260K.gguf', (route) => route.fulfill({ path: stories260kPath() }));
  await p.route('**/wasm/wllama.wasm', (route) =>
    route.fulfill({ path: WASM, contentType: 'application/wasm' }),
  );
  await p.route('**/auto.html', (route) =>
    route.fulfill({
      contentType: 'text/html',
      body:
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>widget on the CPU</title>' +
        '<meta name="viewport" content="width=device-width, initial-scale=1"></head><body>' +
        '<script type="module" src="/widget/webgpu-chat.js"></script>' +
        '<webgpu-chat engine="auto" model="/models/stories260K.gguf" wllama-wasm="/wasm/wllama.wasm" ' +
        'temperature="0" max-tokens="20"></webgpu-chat></body></html>',
    }),
  );
  await p.addInitScript(() => {
    const w = window as unknown as { __ready: unknown[] };
    w.__ready = [];
    document.addEventListener('ready', (e) => w.__ready.push((e as CustomEvent).detail));
  });
  await p.goto('/auto.html');
  // With --disable-webgpu Chromium keeps navigator.gpu but gives no adapter.
  expect(await p.evaluate(async () => (await navigator.gpu?.requestAdapter()) ?? null)).toBeNull();
  const chat = p.locator('webgpu-chat');
  await expect(chat).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(chat.getByRole('heading')).toHaveText('Chat with stories260K');
  await expect(chat.getByRole('alert')).toBeVisible();
  await expect(chat.getByRole('alert')).toContainText('WebGPU has no adapter here');
  await expect(chat.getByRole('alert')).toContainText("runs on the CPU (llama.cpp's wasm build)");
  const ready = (await p.evaluate(() => (window as unknown as { __ready: unknown[] }).__ready)) as {
    engine: string;
    reason: string;
    info: { backend: string; backendReason: string; threads: { count: number } };
  }[];
  expect(ready).toHaveLength(1);
  expect(ready[0].engine).toBe('wllama');
  expect(ready[0].reason).toMatch(/^WebGPU has no adapter here/);
  expect(ready[0].info).toMatchObject({ backend: 'wllama', backendReason: ready[0].reason });
  expect(ready[0].info.threads.count).toBe(1); // this page is not cross-origin isolated

  await shoot(p, testInfo, 'widget-wllama-ready-1280');
  const input = chat.getByLabel('Message');
  await input.fill(GOLDEN.prompt);
  await input.press('Enter');
  const answer = chat.locator('[data-role="assistant"]').last();
  await expect(answer).toHaveAttribute('data-finish', 'length', { timeout: 30_000 });
  const text = (await answer.locator('.msg__body').textContent()) ?? '';
  expect(text.length).toBeGreaterThanOrEqual(60);
  expect(GOLDEN.outputText.startsWith(text), `"${text}" should start llama.cpp's continuation`).toBe(true);
  await expect(chat.locator('[part~="stats"]')).toHaveText(
    /^Last answer: 20 tokens \(max tokens\) · [\d.,]+ tok\/s at 25 tokens of context$/,
  );
  await shoot(p, testInfo, 'widget-wllama-1280');
  await p.setViewportSize({ width: 390, height: 844 });
  await shoot(p, testInfo, 'widget-wllama-390');
  expect(errors).toEqual([]);
});

test('engine="auto" with an unreachable or missing wasm: an error event and the notice, not "Loading…" forever', async ({
  page: p,
}) => {
  await p.route('**/models/stories260K.gguf', (route) => route.fulfill({ path: stories260kPath() }));
  // The default (jsDelivr) unreachable, as offline or behind a CDN block; and a 404 at a site's own URL.
  await p.route('https://cdn.jsdelivr.net/**', (route) => route.abort('internetdisconnected'));
  await p.route('**/wasm/nope.wasm', (route) => route.fulfill({ status: 404, body: 'not found' }));
  await p.route('**/nowasm.html', (route) =>
    route.fulfill({
      contentType: 'text/html',
      body:
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>no wasm</title></head><body>' +
        '<script type="module" src="/widget/webgpu-chat.js"></script>' +
        '<webgpu-chat id="cdn" engine="auto" model="/models/stories260K.gguf"></webgpu-chat>' +
        '<webgpu-chat id="missing" engine="auto" model="/models/stories260K.gguf" wllama-wasm="/wasm/nope.wasm">' +
        '</webgpu-chat></body></html>',
    }),
  );
  await p.addInitScript(() => {
    const w = window as unknown as { __errors: { id: string; detail: unknown }[] };
    w.__errors = [];
    document.addEventListener(
      'error',
      (e) => {
        const t = e.target as Element | null;
        if (t?.tagName === 'WEBGPU-CHAT')
          w.__errors.push({ id: t.id, detail: (e as unknown as CustomEvent).detail });
      },
      true, // capture: the widget's events need not bubble
    );
  });
  await p.goto('/nowasm.html');
  for (const [id, code, text] of [
    ['cdn', 'network', 'cdn.jsdelivr.net/npm/@wllama/wllama@3.13.0/esm/wasm/wllama.wasm'],
    ['missing', 'http_status', 'HTTP 404'],
  ] as const) {
    const chat = p.locator(`#${id}`);
    await expect(chat).toHaveAttribute('data-state', 'error', { timeout: 30_000 });
    await expect(chat.getByRole('alert')).toContainText(text);
    await expect(chat.getByRole('alert')).toContainText('wllama-wasm');
    await expect(chat.getByRole('alert')).toHaveAttribute('data-code', code);
  }
  const errors = (await p.evaluate(() => (window as unknown as { __errors: unknown[] }).__errors)) as {
    id: string;
    detail: { code: string };
  }[];
  expect(errors.map((e) => [e.id, e.detail.code]).sort()).toEqual([
    ['cdn', 'network'],
    ['missing', 'http_status'],
  ]);
});
