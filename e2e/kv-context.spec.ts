/**
 * The load options' context and KV cache selects (issue 44): with a model's shape known, the KV select
 * says what each cache type takes at the chosen context (bench/kv-memory.ts, llama.cpp's bytes), the
 * context select offers lengths up to the trained maximum, and once this GPU is probed each length says
 * which cache type makes it fit and choosing it picks that type; the load takes the chosen context.
 */
import { expect, test } from '@playwright/test';

test.describe.configure({ timeout: 120_000 });

test('context up to the trained maximum, memory per cache type, the fitting type picked, the load takes it', async ({
  page,
}) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/');
  await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
  // Our engine's load options are not shown for a remote endpoint (issue 46: they sat under its results).
  await page.locator('label[for="model-source-remote"]').click();
  await expect(page.getByTestId('local-load-options')).toBeHidden();
  await page.locator('label[for="model-source-synthetic"]').click();
  await expect(page.getByTestId('local-load-options')).toBeVisible();
  await page.locator('#model-synthetic-shape').selectOption('llama-3.1-8b');
  const ctx = page.locator('#model-context');
  const kv = page.locator('#model-kv-type');
  // Llama-3.1-8B: trained on 131,072 tokens; 128 KiB per token in f16 (32 layers × 4,096 B): 256 MiB
  // (268 MB) at 2,048 tokens, 16 GiB (17.2 GB) at 131,072; q8_0 8.5 GiB, q4_0 4.5 GiB.
  await expect(ctx.locator('option')).toHaveText([
    'model default (≤ 2,048)',
    ...[512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072].map(
      (n) => `${n.toLocaleString('en-US')} tokens`,
    ),
  ]);
  await expect(kv.locator('option[value="f16"]')).toHaveText('f16 (default) · 268 MB');
  await ctx.selectOption('131072');
  await expect(kv.locator('option[value="f16"]')).toHaveText('f16 (default) · 17.2 GB');
  await expect(kv.locator('option[value="q8_0"]')).toHaveText('q8_0 · 9.13 GB');
  await expect(kv.locator('option[value="q4_0"]')).toHaveText('q4_0 · 4.83 GB');
  await expect(page.getByTestId('kv-memory')).toContainText(
    'KV cache at 131,072 tokens (32 layers × 8 KV heads × 128)',
  );

  // stories15M (trained on 256 tokens, 6 layers × 6 heads × 48): its one length, and its figures.
  await page.locator('#model-synthetic-shape').selectOption('stories15m');
  await expect(ctx.locator('option')).toHaveText(['model default (≤ 256)', '256 tokens']);

  // Probe SwiftShader (1 GiB, the probe's cap there): Llama-3.2-1B Q4_K_M's 0.8 GB of weights leave
  // room for 4,096 tokens of f16 cache, 8,192 of q8_0, 16,384 of q4_0 (bench/kv-memory.test.ts's rule).
  await page.locator('#model-synthetic-shape').selectOption('llama-3.2-1b');
  await page.locator('#model-synthetic-type').selectOption('q4_k_m');
  await page.getByTestId('kv-probe').click();
  await expect(ctx.locator('option').nth(1)).toHaveText(/^512 tokens · fits at f16$/, { timeout: 30_000 });
  await expect(ctx.locator('option')).toHaveText([
    'model default (≤ 2,048)',
    '512 tokens · fits at f16',
    '1,024 tokens · fits at f16',
    '2,048 tokens · fits at f16',
    '4,096 tokens · fits at f16',
    '8,192 tokens · needs q8_0',
    '16,384 tokens · needs q4_0',
    /^32,768 tokens · may not fit/,
    /^65,536 tokens · may not fit/,
    /^131,072 tokens · may not fit/,
  ]);
  // Choosing a length picks the type that makes it fit.
  await ctx.selectOption('16384');
  await expect(kv).toHaveValue('q4_0');
  await expect(page.getByTestId('kv-memory')).toContainText('With q4_0: fits this GPU');
  await ctx.selectOption('8192');
  await expect(kv).toHaveValue('q8_0');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.locator('#model-context').scrollIntoViewIfNeeded();
  if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/kv-1280.png` });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.locator('#model-context').scrollIntoViewIfNeeded();
  if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/kv-390.png` });
  await page.setViewportSize({ width: 1280, height: 800 });

  // The load takes the chosen context: stories260K's shape at 512 tokens (its trained maximum).
  await page.locator('#model-synthetic-shape').selectOption('stories260k');
  // Its heads are 8 wide: no whole 32-value blocks, so the quantized caches are greyed out, saying why,
  // and a quantized pick made for the last shape goes back to f16.
  for (const t of ['q8_0', 'q4_0']) {
    await expect(kv.locator(`option[value="${t}"]`)).toBeDisabled();
    await expect(kv.locator(`option[value="${t}"]`)).toContainText("multiple of 32 (this model's: 8)");
  }
  await expect(kv).toHaveValue('f16');
  await ctx.selectOption('512');
  await page.getByRole('button', { name: 'Load model' }).click();
  await expect(page.getByTestId('load-status')).toHaveText(/^Loaded /, { timeout: 60_000 });
  await expect(page.locator('[data-field="model-shape"]')).toContainText('context 512');
  expect(errors).toEqual([]);
});
