/**
 * Cancel during a local file's load (issue 46 item 1): "Loading…" stayed ~16 s before "Load cancelled"
 * while the engine's worker was busy in one long step. The page now gives a cancelled load up within a
 * second (ending its worker, whose GPU memory goes with it), and the next load works in a fresh worker.
 */
import { expect, test } from '@playwright/test';
import { stories260kPath } from '../src/testing/models.ts';

test.describe.configure({ timeout: 120_000 });

test('cancel during a file load says "Load cancelled" within ~1 s, and the next load works', async ({
  page,
}) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/');
  await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
  await page.locator('#model-file').setInputFiles(stories260kPath());
  const cancel = page.getByRole('button', { name: 'Cancel' });
  await expect(cancel).toBeVisible();
  await expect(page.getByTestId('load-status')).toHaveText(/^Loading /);
  const t0 = Date.now();
  await cancel.click();
  await expect(page.getByTestId('load-status')).toHaveText('Load cancelled.', { timeout: 5_000 });
  // Within about a second of the click (the grace is 0.8 s), not the 16 s it took.
  expect(Date.now() - t0).toBeLessThan(2_000);
  await expect(cancel).toBeHidden();
  // The cancelled load does not come back as loaded, and the next load works.
  await page.waitForTimeout(1_000);
  await expect(page.getByTestId('load-status')).toHaveText('Load cancelled.');
  await page.locator('#model-file').setInputFiles(stories260kPath());
  await expect(page.getByTestId('load-status')).toHaveText(/^Loaded stories260K in /, { timeout: 60_000 });
  expect(errors).toEqual([]);
});
