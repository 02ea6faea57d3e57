/**
 * A first run on the benchmark page as a new user meets it (issue 19, "The page"): the form starts with the
 * default plan `npm run bench` uses and says so; Run benchmark brings the live view into sight and, at the
 * end, the results, and the line under the button says where they are; the token timeline's legend is a
 * key without placeholders or repeated colours; What fits' context is not above the model's; a chat answer
 * starts at its first word.
 */
import { expect, type Page, test } from '@playwright/test';
import { DEFAULT_PLAN } from '../src/bench/default-plan.ts';
import { stories260kPath } from '../src/testing/models.ts';
import { SYNTHETIC_SHAPES, syntheticShapeRunnable } from '../src/webgpu/model/synthetic.ts';

/** The synthetic shapes the page lists: every shape whose architecture the engine runs (11 with Gemma and Phi). */
const N_SHAPES = SYNTHETIC_SHAPES.filter(syntheticShapeRunnable).length;

const MODEL = stories260kPath();

test.describe.configure({ timeout: 120_000 });

async function load(page: Page): Promise<void> {
  await page.goto('/');
  await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
  await page.locator('#model-file').setInputFiles(MODEL);
  await expect(page.getByTestId('load-status')).toHaveText(/^Loaded stories260K in /, { timeout: 60_000 });
}

/** The card's top relative to the viewport (0 = at its top edge). */
const topOf = (page: Page, card: string) =>
  page.locator(`[data-card="${card}"]`).evaluate((e) => e.getBoundingClientRect().top);

test('default plan, the live view and results brought into sight, the timeline key, What fits, chat', async ({
  page,
}) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.emulateMedia({ reducedMotion: 'reduce' });
  await load(page);
  const plan = page.locator('[data-card="plan"]');
  await expect(plan.getByTestId('plan-defaults')).toContainText(
    `${DEFAULT_PLAN.maxTokens} tokens × ${DEFAULT_PLAN.runs} runs per prompt`,
  );
  await expect(plan.getByTestId('plan-defaults')).toContainText('npm run bench');
  await expect(page.locator('#plan-max-tokens')).toHaveValue(String(DEFAULT_PLAN.maxTokens));
  await expect(page.locator('#plan-runs')).toHaveValue(String(DEFAULT_PLAN.runs));
  await expect(page.locator('#plan-warmup')).toHaveValue(String(DEFAULT_PLAN.warmup));
  await expect(page.locator('#plan-prompts')).toHaveValue(DEFAULT_PLAN.promptSet);
  await expect(page.locator('#plan-ignore-eos')).not.toBeChecked();
  await expect(plan.getByTestId('plan-where')).toContainText('Live');

  // What fits: the context is the model's (2048), not 4096 above it.
  const ctx = await page.locator('#lb-fit-ctx').inputValue();
  expect(Number(ctx)).toBe(Math.min(4096, 2048));

  // Run (8 tokens, 3 prompts × 3 runs: 9 measured runs, more than the palette's 8 colours).
  await page.locator('#plan-max-tokens').fill('8');
  await page.locator('#plan-runs').fill('3');
  await page.getByRole('button', { name: 'Run benchmark' }).click();
  // Reduced motion: the jump is instant, so the live card is at the top at once.
  await expect.poll(() => topOf(page, 'live'), { timeout: 2_000 }).toBeLessThan(2);
  expect(await topOf(page, 'live')).toBeGreaterThan(-2);
  await expect(page.getByTestId('run-status')).toHaveText(/^Done: 9 measured runs\./, { timeout: 60_000 });
  await expect.poll(() => topOf(page, 'results'), { timeout: 2_000 }).toBeLessThan(2);
  expect(await topOf(page, 'results')).toBeGreaterThan(-2);
  await expect(plan.getByTestId('plan-where')).toHaveText(/^Results are below, under Results/);

  // The timeline's key: one entry per measured run, no hover placeholders, no colour twice.
  const legend = page.locator('[data-card="live"] .u-legend');
  await expect(legend.locator('.u-series')).toHaveCount(9);
  const key = (await legend.textContent()) ?? '';
  expect(key).not.toMatch(/--|–|ms:/);
  const colors = await legend
    .locator('.u-series .u-marker')
    .evaluateAll((ms) => ms.map((m) => getComputedStyle(m).borderColor));
  expect(new Set(colors).size).toBe(9);

  // Chat: the answer starts at its first word ("was", not " was").
  await page.getByRole('tab', { name: 'Chat' }).click();
  const chat = page.getByRole('tabpanel', { name: 'Chat' });
  await chat.locator('#chat-max-tokens').fill('4');
  await chat.getByLabel('Message').fill('Once upon a time there');
  await chat.getByRole('button', { name: 'Send' }).click();
  await expect(page.getByTestId('chat-speed')).toHaveText(/^Last answer/, { timeout: 60_000 });
  const answer = (await chat.locator('.msg__body').last().textContent()) ?? '';
  expect(answer).toMatch(/^was\b/);
  expect(errors).toEqual([]);
});

test('without reduced motion the results still end in sight (smooth scroll)', async ({ page }) => {
  await page.emulateMedia({ reducedMotion: 'no-preference' });
  await load(page);
  await page.locator('#plan-max-tokens').fill('4');
  await page.locator('#plan-runs').fill('1');
  await page.locator('#plan-warmup').fill('0');
  await page.getByRole('button', { name: 'Run benchmark' }).click();
  await expect(page.getByTestId('run-status')).toHaveText(/^Done: 3 measured runs\./, { timeout: 60_000 });
  await expect.poll(() => topOf(page, 'results'), { timeout: 5_000 }).toBeLessThan(2);
  expect(await topOf(page, 'results')).toBeGreaterThan(-2);
});

test('models to start with: hf: files loaded in one click, synthetic shapes, what fits this GPU', async ({
  page,
}) => {
  // No network here: the click can only be followed as far as the requests it makes.
  const requests: string[] = [];
  await page.route('https://huggingface.co/**', (route) => {
    requests.push(route.request().url());
    return route.fulfill({ status: 404, contentType: 'text/plain', body: 'offline' });
  });
  await page.goto('/');
  await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
  const box = page.getByTestId('recommended');
  await expect(box).toHaveAttribute('open', '');
  const items = box.getByTestId('recommended-models').locator('li');
  await expect(items).toHaveCount(4);
  await expect(items.first()).toContainText('MIT');
  await expect(items.first()).toContainText(/needs ≈ [\d.]+ MB of GPU memory at 2048 tokens/);
  expect(N_SHAPES).toBeGreaterThanOrEqual(11);
  await expect(box.getByTestId('recommended-shapes').locator('li')).toHaveCount(N_SHAPES);

  await box.getByTestId('recommended-probe').click();
  await expect(box.getByTestId('recommended-status')).toHaveText(/^This GPU: buffers up to /, {
    timeout: 30_000,
  });
  // stories260K fits anywhere; every row now has a verdict.
  await expect(items.first().locator('[data-fit]')).toHaveAttribute('data-fit', 'ok');
  await expect(box.locator('[data-fit]')).toHaveCount(4 + N_SHAPES);

  await box.getByRole('button', { name: 'Load SmolLM2 360M Instruct (Q8_0)' }).click();
  await expect(page.locator('#model-url')).toHaveValue(
    'hf:HuggingFaceTB/SmolLM2-360M-Instruct-GGUF/smollm2-360m-instruct-q8_0.gguf',
  );
  await expect
    .poll(() => requests.some((u) => u.includes('/HuggingFaceTB/SmolLM2-360M-Instruct-GGUF/')))
    .toBe(true);

  // A synthetic shape runs in one click too, and a loaded model folds the list away.
  await page.locator('#model-source-file').check({ force: true });
  await box.getByRole('button', { name: 'Run synthetic stories260K (llama2.c tinyllamas)' }).click();
  await expect(page.getByTestId('load-status')).toHaveText(/^Loaded synthetic:stories260k-q4_k_m in /, {
    timeout: 60_000,
  });
  await expect(box).not.toHaveAttribute('open', '');
});
