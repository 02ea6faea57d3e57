/**
 * The benchmark page's "Your CPU (llama.cpp wasm)" card end to end in Chromium (SwiftShader for the GPU
 * run): load stories260K from the file picker, run a greedy benchmark on WebGPU, then the same model and
 * plan through wllama on the CPU; the card shows both medians and GPU ÷ CPU, the threads and cross-origin
 * isolation; the result is saved with its cpu block (History's "vs CPU" line). Screenshots at 1280×800 and
 * 390×844 go to `$SCREENSHOT_DIR` when set, else to the test's output folder. Then the page with
 * WebGPU switched off (`--disable-webgpu`: navigator.gpu gives no adapter): its engine choice is `auto`,
 * which takes wllama by itself, says why, and benchmarks stories260K with llama.cpp's greedy text.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, expect, type Page, type TestInfo, test } from '@playwright/test';
import { chromiumArgs, resolveChromium } from '../src/cli/browser.ts';
import { stories260kPath } from '../src/testing/models.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const golden = JSON.parse(readFileSync(resolve(ROOT, 'tests/golden/stories260K.json'), 'utf8')) as {
  generation: { cases: { prompt: string; outputText: string }[] };
};
const GOLDEN = golden.generation.cases[0];

test.describe.configure({ timeout: 180_000 });

async function shoot(p: Page, testInfo: TestInfo, name: string): Promise<void> {
  const dir = process.env.SCREENSHOT_DIR;
  await p.screenshot({ path: dir ? `${dir}/${name}.png` : testInfo.outputPath(`${name}.png`) });
}

test('after a GPU run, "Measure my CPU" runs the same plan on wllama and saves the ratio', async ({
  page,
}, testInfo) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/#benchmark');
  await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
  const card = page.locator('[data-card="cpu"]');
  await expect(card.getByTestId('cpu-run')).toBeDisabled();
  await expect(card.getByTestId('cpu-status')).toHaveText('Run the benchmark on the GPU first.');

  await page.locator('#model-file').setInputFiles(stories260kPath());
  await expect(page.getByTestId('load-status')).toHaveText(/^Loaded stories260K in /, { timeout: 60_000 });
  const panel = page.getByRole('tabpanel', { name: 'Benchmark' });
  await panel.getByLabel('Prompts').selectOption('custom');
  await panel.getByLabel('Custom prompt').fill('Once upon a time');
  await panel.getByLabel('Max tokens').fill('24');
  await panel.getByLabel('Runs per prompt').fill('2');
  await panel.getByLabel('Warm-up runs').fill('0');
  await panel.getByLabel('Temperature').fill('0');
  await panel.getByRole('button', { name: 'Run benchmark' }).click();
  await expect(page.getByTestId('run-status')).toHaveText(/^Done: 2 measured runs\./, { timeout: 60_000 });

  await expect(card.getByTestId('cpu-run')).toBeEnabled();
  // The blocker's words go with the blocker (it kept saying "Run the benchmark on the GPU first.").
  await expect(card.getByTestId('cpu-status')).toHaveText(
    'Ready: the same plan on the CPU (llama.cpp wasm), one click.',
  );
  await card.getByTestId('cpu-run').click();
  await expect(card.getByTestId('cpu-status')).toHaveText('Done: 2 CPU runs.', { timeout: 90_000 });
  await expect(card.getByTestId('cpu-error')).toBeHidden();
  const table = card.getByTestId('cpu-table');
  // Every ratio is a real number (GPU ÷ CPU), not the dash of a missing figure.
  for (const m of ['ttft', 'prefill', 'decode'])
    await expect(table.locator(`[data-field="ratio-${m}"]`)).toHaveText(/^\d+(\.\d+)?×$/);
  await expect(card.getByTestId('cpu-sentence')).toHaveText(
    /^On stories260K, (this GPU is [\d.]+× your CPU|your CPU is [\d.]+× this GPU) at decode\.$/,
  );
  // The test's adapter is SwiftShader: the card says both columns ran on this CPU.
  await expect(card.getByTestId('cpu-software-note')).toContainText('software adapter');
  // vite preview sends no COOP/COEP: one thread, and the card says what a page needs for more.
  await expect(card.getByTestId('cpu-threads')).toContainText(
    'Medians of 2 CPU runs on 1 thread; this page is not cross-origin isolated.',
  );
  await expect(card.getByTestId('cpu-threads')).toContainText('Cross-Origin-Embedder-Policy: require-corp');
  // The column says what its ratio is: how many times faster the GPU is, a time's ratio the CPU's ÷ the GPU's.
  await expect(table.locator('thead th').nth(3)).toHaveText('Speed-up');
  const ttft = await table.locator('tr[data-metric="ttft"] td').allTextContents();
  const ms = (t: string) => Number.parseFloat(t.replace(/,/g, ''));
  const ttftRatio = ms(ttft[1]) / ms(ttft[0]);
  expect(Math.abs(Number.parseFloat(ttft[2]) / ttftRatio - 1)).toBeLessThan(0.06);
  // The ratio shown is the one computed from the two medians shown (rounded as the card rounds).
  const cells = await table.locator('tr[data-metric="decode"] td').allTextContents();
  const gpu = Number.parseFloat(cells[0].replace(/,/g, ''));
  const cpu = Number.parseFloat(cells[1].replace(/,/g, ''));
  const shown = Number.parseFloat(cells[2]);
  expect(Math.abs(shown - gpu / cpu) / (gpu / cpu)).toBeLessThan(0.06);

  await card.scrollIntoViewIfNeeded();
  await shoot(page, testInfo, 'cpu-card-1280');
  await page.setViewportSize({ width: 390, height: 844 });
  await card.scrollIntoViewIfNeeded();
  await shoot(page, testInfo, 'cpu-card-390');
  await page.setViewportSize({ width: 1280, height: 800 });

  // Saved: History's entry has the CPU line with the same ratio.
  await page.getByRole('tab', { name: 'History' }).click();
  const entry = page.getByTestId('history-entry').first();
  await expect(entry.locator('[data-field="cpu"]')).toHaveText(
    new RegExp(`^${cells[2].replace('.', '\\.')} \\(CPU `),
  );
  expect(errors).toEqual([]);
});

test('without WebGPU the page chooses wllama by itself and still benchmarks', async ({
  baseURL,
}, testInfo) => {
  const browser = await chromium.launch({
    executablePath: resolveChromium().path,
    args: chromiumArgs({ disableWebGPU: true }),
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${baseURL ?? ''}/#benchmark`);
    await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
    await expect(page.getByTestId('no-webgpu')).toContainText('models run on the CPU instead');
    await expect(page.locator('#model-engine')).toHaveValue('auto');
    await page.locator('#model-file').setInputFiles(stories260kPath());
    await expect(page.getByTestId('load-status')).toHaveText(/^Loaded stories260K in /, { timeout: 60_000 });
    await expect(page.getByTestId('engine-reason')).toHaveText(
      /^llama\.cpp wasm \(CPU\): WebGPU has no adapter here .*, so the model runs on the CPU/,
    );
    // wllama's load phases by their names: no GPU upload, no shaders (issue 46).
    const phases = page.getByRole('group', { name: 'Load progress' });
    await expect(phases.locator('label[for="load-upload"]')).toHaveText('Load into wasm');
    await expect(phases.locator('[data-phase="compile"]')).toBeHidden();
    // The file was read: its bar says the bytes and time, as the summary's fetch does (not "nothing to do").
    await expect(phases.locator('[data-phase="fetch"] .phase__text')).toHaveText(/^1\.19 MB of 1\.19 MB · /);
    await expect(page.locator('[data-field="model-load"]')).toHaveText(/\(fetch .*, load into wasm .*\)$/);
    await phases.scrollIntoViewIfNeeded();
    await shoot(page, testInfo, 'no-webgpu-phases-1280');
    await page.setViewportSize({ width: 390, height: 844 });
    await phases.scrollIntoViewIfNeeded();
    await shoot(page, testInfo, 'no-webgpu-phases-390');
    await page.setViewportSize({ width: 1280, height: 800 });
    const panel = page.getByRole('tabpanel', { name: 'Benchmark' });
    await expect(panel.locator('#plan-hint')).toHaveText('Runs on stories260K on the CPU (llama.cpp wasm).');
    // Drafting (speculative decoding) is ours only: the select is off at None and says why, in both tabs.
    const offLine =
      'Drafting runs on our WebGPU engine only: stories260K runs on the CPU (llama.cpp wasm); load it with Engine: WebGPU to draft.';
    for (const id of ['plan', 'chat']) {
      await expect(page.locator(`#${id}-draft`)).toBeDisabled();
      await expect(page.locator(`#${id}-draft`)).toHaveValue('');
      await expect(page.locator(`#${id}-draft-status`)).toHaveText(offLine);
    }
    await panel.locator('#plan-draft').scrollIntoViewIfNeeded();
    await shoot(page, testInfo, 'no-webgpu-drafting-1280');
    await page.setViewportSize({ width: 390, height: 844 });
    await panel.locator('#plan-draft').scrollIntoViewIfNeeded();
    await shoot(page, testInfo, 'no-webgpu-drafting-390');
    await page.setViewportSize({ width: 1280, height: 800 });
    await panel.getByLabel('Prompts').selectOption('custom');
    await panel.getByLabel('Custom prompt').fill(GOLDEN.prompt);
    await panel.getByLabel('Max tokens').fill('20');
    await panel.getByLabel('Runs per prompt').fill('1');
    await panel.getByLabel('Warm-up runs').fill('0');
    await panel.getByLabel('Temperature').fill('0');
    await panel.getByRole('button', { name: 'Run benchmark' }).click();
    await expect(page.getByTestId('run-status')).toHaveText(/^Done: 1 measured run\./, { timeout: 60_000 });
    // The results say the CPU ran it (the result keeps the page's adapter, if any, as its device).
    await expect(page.locator('#results-heading ~ .card__lede')).toHaveText(
      /^stories260K in llama\.cpp wasm on this computer’s CPU · 1 measured run, /,
    );
    // The Quality panel says which engine holds the model, and what to do.
    await expect(page.getByTestId('quality-status')).toHaveText(
      'Our WebGPU engine only: this model runs on the CPU (llama.cpp wasm); load it with Engine: WebGPU to compare cache types.',
    );
    // llama.cpp's greedy continuation (its first 20 tokens).
    const text = (await page.getByTestId('stream-output').textContent()) ?? '';
    expect(text.length).toBeGreaterThanOrEqual(60);
    expect(GOLDEN.outputText.startsWith(text), `"${text}" should start llama.cpp's continuation`).toBe(true);
    await page.getByTestId('engine-choice').scrollIntoViewIfNeeded();
    await shoot(page, testInfo, 'no-webgpu-auto-1280');
    // Saved as a wllama result on the CPU device.
    await page.getByRole('tab', { name: 'History' }).click();
    const entry = page.getByTestId('history-entry').first();
    await expect(entry.locator('.entry__title')).toHaveText(
      /^stories260K · wllama · own prompts [0-9a-f]{8}, 20 tokens$/,
    );
    await expect(entry.locator('.entry__device')).toContainText('CPU');
    expect(errors).toEqual([]);
  } finally {
    await browser.close();
  }
});

test('on a software adapter the page’s default, Auto, runs the model on wllama; a pick of WebGPU is remembered', async ({
  browser,
  baseURL,
}, testInfo) => {
  // A visitor's first visit: nothing stored (the config preloads `webgpu` for the other specs).
  const context = await browser.newContext({
    storageState: { cookies: [], origins: [] },
    viewport: { width: 1280, height: 800 },
  });
  try {
    const page = await context.newPage();
    await page.goto(`${baseURL ?? ''}/#benchmark`);
    await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
    await expect(page.locator('#model-engine')).toHaveValue('auto');
    await page.locator('#model-file').setInputFiles(stories260kPath());
    await expect(page.getByTestId('load-status')).toHaveText(/^Loaded stories260K in /, { timeout: 60_000 });
    // SwiftShader is a CPU emulating a GPU: llama.cpp's wasm build answers instead, saying why.
    await expect(page.getByTestId('engine-reason')).toHaveText(/^llama\.cpp wasm \(CPU\): .*software/);
    await expect(page.locator('#plan-hint')).toHaveText('Runs on stories260K on the CPU (llama.cpp wasm).');
    // The llama-bench card names the CPU engine (it called the GGUF "a WebLLM model") and says how to run it.
    await expect(page.getByTestId('lb-unavailable')).toContainText(
      'llama-bench tests are not available on the CPU engine (llama.cpp wasm).',
    );
    await expect(page.getByTestId('lb-unavailable')).toContainText('Choose Engine: WebGPU');
    await expect(page.getByTestId('lb-unavailable')).not.toContainText('WebLLM');
    await expect(page.getByTestId('lb-status')).toHaveText('Model: stories260K (CPU: llama.cpp wasm).');
    await page.getByTestId('engine-choice').scrollIntoViewIfNeeded();
    await shoot(page, testInfo, 'software-auto-1280');
    // A new pick is for the next load: the note no longer says the loaded model runs "as chosen".
    await page.locator('#model-engine').selectOption('webgpu');
    await expect(page.getByTestId('engine-reason')).toHaveText(
      'The loaded model runs on llama.cpp wasm (CPU); this choice applies to the next load.',
    );
    // The user's pick is kept across a reload.
    await page.reload();
    await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
    await expect(page.locator('#model-engine')).toHaveValue('webgpu');
  } finally {
    await context.close();
  }
});
