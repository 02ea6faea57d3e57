/**
 * WebLLM in the built page, offline: the picker's catalogue filtered for this adapter (SwiftShader: no
 * shader-f16, so f16 models are listed disabled with the reason), a WebLLM benchmark through the page
 * API that cannot reach the network ends with an EngineError code and leaves the page usable, and loading a
 * WebLLM model from the picker fails cleanly (network / HTTP status: no network here) with the page then
 * loading and benchmarking a synthetic model in our engine.
 *
 * Screenshots go to `$SCREENSHOT_DIR` (e.g. `/tmp`) when set, else to the test's output folder.
 */
import { expect, type Page, test } from '@playwright/test';

const shot = (name: string, testInfo: { outputPath: (f: string) => string }) =>
  process.env.SCREENSHOT_DIR ? `${process.env.SCREENSHOT_DIR}/${name}` : testInfo.outputPath(name);

async function openApp(page: Page): Promise<void> {
  await page.goto('/');
  await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
}

test('WebLLM pane: catalogue filtered for this adapter, disabled models say why', async ({ page }) => {
  await openApp(page);
  await page.getByRole('tab', { name: 'Benchmark' }).click();
  const panel = page.getByRole('tabpanel', { name: 'Benchmark' });
  await panel.getByRole('radio', { name: /WebLLM model/ }).check();
  const select = page.getByTestId('webllm-model');
  const ok = select.locator('option[value="Llama-3.2-1B-Instruct-q4f32_1-MLC"]');
  await expect(ok).toBeEnabled({ timeout: 20_000 });
  const f16 = select.locator('option[value="Llama-3.2-1B-Instruct-q4f16_1-MLC"]');
  const hasF16 = await page.evaluate(async () =>
    Boolean((await navigator.gpu?.requestAdapter())?.features.has('shader-f16')),
  );
  if (!hasF16) {
    await expect(f16).toBeDisabled();
    await expect(f16).toContainText('shader-f16');
  }
  await expect(page.getByTestId('webllm-info')).toContainText(/\d+ of \d+ models offered on this adapter/);
  await expect(page.getByTestId('webllm-storage')).toContainText(/Storage: .* used of /, { timeout: 20_000 });
  // An offered model can be loaded into the page.
  await expect(panel.getByRole('button', { name: 'Load model' })).toBeEnabled();
});

test('WebLLM load from the picker offline: a clean error, then a synthetic model loads and benchmarks', async ({
  page,
}, testInfo) => {
  test.setTimeout(180_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await openApp(page);
  const panel = page.getByRole('tabpanel', { name: 'Benchmark' });
  await panel.getByRole('radio', { name: /WebLLM model/ }).check();
  const select = page.getByTestId('webllm-model');
  const id = 'SmolLM2-135M-Instruct-q0f32-MLC';
  await expect(select.locator(`option[value="${id}"]`)).toBeEnabled({ timeout: 20_000 });
  await select.selectOption(id);
  const load = panel.getByRole('button', { name: 'Load model' });
  await expect(load).toBeEnabled();
  await expect(page.getByTestId('webllm-storage')).toContainText(/Storage: /, { timeout: 20_000 });
  await page.locator('[data-card="model"]').screenshot({ path: shot('ui-webllm-pane.png', testInfo) });

  await load.click();
  const status = page.getByTestId('load-status');
  await expect(status).toHaveText('The model did not load.', { timeout: 120_000 });
  const alert = page.locator('[data-card="model"] > [role="alert"]');
  await expect(alert).toBeVisible();
  // No network here: huggingface.co / GitHub cannot be reached (network), or answer with an error (http_status).
  await expect(alert).toHaveText(/^Load failed \((network|http_status)\): /);
  await expect(panel.getByRole('button', { name: 'Cancel' })).toBeHidden();
  await expect(load).toBeEnabled();
  await expect(panel.getByRole('button', { name: 'Run benchmark' })).toBeDisabled();
  await page.locator('[data-card="model"]').screenshot({ path: shot('ui-webllm-error.png', testInfo) });

  // The page is usable: a synthetic model loads into our engine and benchmarks.
  await panel.getByRole('radio', { name: /Synthetic demo/ }).check();
  await panel.getByRole('button', { name: 'Load model' }).click();
  await expect(status).toHaveText(/^Loaded synthetic:stories260k-f32 in /, { timeout: 60_000 });
  await expect(alert).toBeHidden();
  await expect(
    page.locator('[data-card="llama-bench"]').getByRole('button', { name: 'Run llama-bench' }),
  ).toBeEnabled();
  await expect(page.getByTestId('lb-unavailable')).toBeHidden();
  await panel.getByLabel('Max tokens').fill('4');
  await panel.getByLabel('Runs per prompt').fill('1');
  await panel.getByLabel('Warm-up runs').fill('0');
  await panel.getByRole('button', { name: 'Run benchmark' }).click();
  await expect(page.getByTestId('run-status')).toHaveText(/^Done: \d+ measured runs?\./, { timeout: 60_000 });
  await expect(page.getByTestId('results')).toBeVisible();
  await expect(page.getByTestId('engine-reported')).toHaveCount(0);
  expect(errors).toEqual([]);
});

test('WebLLM benchmark offline: an EngineError code, and the page runs the next benchmark', async ({
  page,
}) => {
  await openApp(page);
  const code = await page.evaluate(async () => {
    try {
      await window.benchApi?.runFromCli({
        engine: 'webllm',
        model: { url: 'webllm:SmolLM2-135M-Instruct-q0f32-MLC', id: 'SmolLM2-135M-Instruct-q0f32-MLC' },
        plan: { prompts: [{ name: 'p', text: 'Hi' }], maxTokens: 4, runs: 1, warmup: 0, ignoreEos: false },
        roofline: false,
        timeoutMs: 20_000,
      });
      return 'resolved';
    } catch (e) {
      return (e as { code?: string }).code ?? String(e);
    }
  });
  // No network here: huggingface.co is unreachable (network); with network it would load.
  expect(['network', 'timeout', 'http_status']).toContain(code);
  const r = await page.evaluate(() =>
    window.benchApi?.runFromCli({
      engine: 'webgpu',
      model: { synthetic: 'stories260k-f32' },
      plan: { prompts: [{ name: 'p', text: 'Hi' }], maxTokens: 4, runs: 1, warmup: 0, ignoreEos: true },
      roofline: false,
    }),
  );
  expect(r?.runs.length).toBe(1);
});
