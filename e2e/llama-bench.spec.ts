/**
 * The benchmark's part two on the page, in real Chromium (SwiftShader without a GPU): load a synthetic
 * model, run tiny llama-bench tests, see the kernel shares, price a token, probe memory and read which
 * synthetic shapes fit. Screenshots of the card (1280×800 and 390×844) go to `$SCREENSHOT_DIR` when set.
 */
import { expect, test } from '@playwright/test';

test.describe.configure({ timeout: 120_000 });

test('llama-bench tests, kernel shares, cost and what fits', async ({ page }, testInfo) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/');
  await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
  const panel = page.getByRole('tabpanel', { name: 'Benchmark' });
  await panel.getByRole('radio', { name: 'Synthetic demo' }).check();
  await panel.getByLabel('Model shape').selectOption('stories260k');
  await panel.getByLabel('Weights').selectOption('f32');
  // The KV-cache type beside the default-limits switch (LoadOptions.kvType).
  await page.locator('[data-card="model"]').getByLabel('KV cache').selectOption('f32');
  await panel.getByRole('button', { name: 'Load model' }).click();
  await expect(page.getByTestId('load-status')).toHaveText(/^Loaded synthetic:stories260k-f32 in /, {
    timeout: 60_000,
  });
  const card = page.locator('[data-card="llama-bench"]');
  await card.getByLabel('Prompt tokens (pp)').fill('32');
  await card.getByLabel('Generated tokens (tg)').fill('8');
  await card.getByLabel('KV depths').fill('0,128');
  await card.getByLabel('Repetitions').fill('2');
  await card.getByRole('button', { name: 'Run llama-bench' }).click();
  await expect(page.getByTestId('lb-status')).toHaveText(/^Done: 4 tests/, { timeout: 60_000 });
  const rows = page.getByTestId('lb-tests').locator('tbody tr');
  await expect(rows).toHaveCount(4);
  await expect(rows.nth(3)).toContainText('tg8 @ d128');
  await expect(rows.nth(3)).toContainText('±'); // two repetitions: a spread
  await expect(page.getByTestId('lb-kernels')).toContainText('dispatches per token');
  await expect(page.getByTestId('lb-kernels').locator('.bars__row')).toHaveCount(8);
  await expect(page.getByTestId('lb-cost')).toContainText('per 1M output tokens');
  // Sweep to context: depths 0, 1024, … up to the loaded context (2048) less the largest test (32).
  await card.getByRole('button', { name: 'Sweep to context' }).click();
  await expect(card.getByLabel('KV depths')).toHaveValue('0,1024,2016');
  await card.getByLabel('Prompt tokens (pp)').fill('0');
  await card.getByRole('button', { name: 'Sweep to context' }).click();
  await expect(card.getByLabel('KV depths')).toHaveValue('0,1024,2040');
  await card.getByLabel('Repetitions').fill('1');
  await card.getByRole('button', { name: 'Run llama-bench' }).click();
  await expect(page.getByTestId('lb-status')).toHaveText(/^Done: 3 tests/, { timeout: 90_000 });
  await expect(rows).toHaveCount(3);
  await expect(rows.nth(2)).toContainText('tg8 @ d2040');
  // One repetition has no spread to show: no "± 0.00".
  await expect(rows.nth(2)).toContainText('(1 run)');
  await expect(rows.nth(2)).not.toContainText('±');
  // The chart's depth axis reaches the loaded context.
  await expect(card.locator('.lb-chart').first()).toContainText('context 2048');
  await card.getByLabel('Basis').selectOption('remote');
  await card.getByLabel('Price per hour').fill('3.6');
  await expect(page.getByTestId('lb-cost')).toContainText('3.600 USD/h');

  await card.getByLabel('Weight type').selectOption('f16');
  await card.getByLabel('Context (tokens)').fill('2048');
  await card.getByRole('button', { name: 'Probe GPU memory' }).click();
  await expect(page.getByTestId('lb-fits')).toContainText('Largest buffer', { timeout: 30_000 });
  await expect(page.getByTestId('lb-fit-loaded')).toContainText('Loaded synthetic:stories260k-f32: needs');
  await expect(page.getByTestId('lb-fit-loaded')).toContainText('f32 KV cache at 2048 tokens');
  await expect(page.getByTestId('lb-fits').locator('.lb-fit--ok').first()).toContainText(
    /stories260K.* F16, f16 KV/,
  );
  // The verdict counts the chosen KV type: 4 bytes per element for f32, twice f16's cache.
  const need = async () =>
    (await page.getByTestId('lb-fits').locator('.lb-fit__need').last().textContent()) ?? '';
  const f16Need = await need();
  await card.getByLabel('KV cache').selectOption('f32');
  await expect(page.getByTestId('lb-fits').locator('.lb-fit').last()).toContainText('f32 KV');
  expect(await need()).not.toBe(f16Need);
  await expect(page.getByTestId('lb-fits').locator('.lb-fit--no').last()).toContainText('Llama-3.1-8B');
  expect(errors).toEqual([]);

  const dir = process.env.SCREENSHOT_DIR;
  for (const [label, viewport] of [
    ['desktop', { width: 1280, height: 800 }],
    ['phone', { width: 390, height: 844 }],
  ] as const) {
    await page.setViewportSize(viewport);
    await page.waitForTimeout(150);
    const widths = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    expect(widths[0], `page width at ${viewport.width}px`).toBeLessThanOrEqual(widths[1]);
    const f = `ui-llama-bench-${label}.png`;
    await card.screenshot({ path: dir ? `${dir}/${f}` : testInfo.outputPath(f) });
  }
});
