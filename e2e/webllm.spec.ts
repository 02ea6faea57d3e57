/**
 * WebLLM in the built page, offline: the picker's catalogue filtered for this adapter (SwiftShader: no
 * shader-f16, so f16 models are listed disabled with the reason), and a WebLLM benchmark through the page
 * API that cannot reach the network ends with an EngineError code and leaves the page usable.
 */
import { expect, type Page, test } from '@playwright/test';

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
  await expect(panel.getByRole('button', { name: 'Load model' })).toBeHidden();
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
