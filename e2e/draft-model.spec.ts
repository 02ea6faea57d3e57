/**
 * The page's draft model for speculative decoding, in Chromium (SwiftShader) on the built page: stories260K
 * loaded with a copy kept in this browser is offered in the Benchmark's Drafting select as
 * "Draft model: stories260K.gguf"; choosing it loads it beside the target (the engine's setDraft), and the
 * benchmark then drafts with it — the target's own weights, so every drafted token is accepted and the
 * output is the same as without drafting. A draft with another vocabulary (a random model of 300 tokens
 * written by the project's GGUF writer, picked as a file) is refused with the engine's typed error, shown
 * under the select, and the target stays loaded without being loaded again (the worker sees no second
 * `load`) and still runs the benchmark. Screenshots at 1280×800 and 390×844.
 */
import { resolve } from 'node:path';
import { expect, type Page, test } from '@playwright/test';
import { makeRandomLlamaGguf } from '../src/model/random-model.ts';
import { stories260kPath } from '../src/testing/models.ts';

const MODEL = stories260kPath();

async function shoot(page: Page, name: string): Promise<void> {
  const dir = process.env.SCREENSHOT_DIR;
  await page.screenshot({ path: dir ? resolve(dir, `${name}.png`) : test.info().outputPath(`${name}.png`) });
}

/** A new conversation, one message, and the answer's text once it has finished. */
async function ask(page: Page, text: string): Promise<string> {
  const chat = page.getByRole('tabpanel', { name: 'Chat' });
  const clear = chat.getByRole('button', { name: 'New conversation' });
  if (await clear.isEnabled()) await clear.click();
  await chat.getByLabel('Message').fill(text);
  await chat.getByRole('button', { name: 'Send' }).click();
  const answer = chat.locator('[data-role="assistant"]').last();
  await expect(answer).toHaveAttribute('data-finish', /./, { timeout: 60_000 });
  return (await answer.locator('.msg__body').textContent()) ?? '';
}

test.describe.configure({ timeout: 240_000 });

test('benchmark: a library model as the draft (100% accepted, same output); another vocabulary is refused', async ({
  page,
}) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.emulateMedia({ reducedMotion: 'reduce' });
  await page.goto('/');
  await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
  await page.getByLabel(/Also keep a copy in this browser/).check();
  await page.locator('#model-file').setInputFiles(MODEL);
  await expect(page.getByTestId('load-status')).toHaveText(/^Loaded stories260K in /, { timeout: 60_000 });

  // The kept copy is offered as a draft model; choosing it loads it beside the target.
  const select = page.locator('#plan-draft');
  await expect(select.locator('option', { hasText: 'Draft model: stories260K.gguf' })).toHaveCount(1);
  const spec = await select
    .locator('option', { hasText: 'Draft model: stories260K.gguf' })
    .getAttribute('value');
  await select.selectOption(spec!);
  const status = page.locator('#plan-draft-status');
  await expect(status).toHaveText(/^stories260K drafts for stories260K \(5 layers, 64 wide, /, {
    timeout: 60_000,
  });
  await expect(select).toHaveValue('model');
  await expect(select.locator('option:checked')).toHaveText('Draft model: stories260K (loaded)');
  // The chat's select follows the session.
  await expect(
    page.locator('#chat-draft option', { hasText: 'Draft model: stories260K (loaded)' }),
  ).toHaveCount(1);

  await page.locator('#plan-max-tokens').fill('24');
  await page.locator('#plan-runs').fill('1');
  await page.locator('#plan-warmup').fill('1');
  await page.getByRole('button', { name: 'Run benchmark' }).click();
  await expect(page.getByTestId('run-status')).toHaveText(/^Done: 3 measured runs\./, { timeout: 180_000 });
  const block = page.getByTestId('result-speculative');
  await expect(block).toHaveText(
    /^Speculative decoding \(draft model stories260K\): 100\s?% of \d+ drafted tokens accepted, [\d.]+ tokens per target pass; decode [\d.]+× the same runs without drafting \([\d.,]+ tok\/s(: slower with drafting)?\), same output\.$/,
  );
  await block.scrollIntoViewIfNeeded();
  await shoot(page, 'draft-model-result-1280');

  // The chat drafts with it too: the same greedy text as without, every drafted token accepted.
  await page.getByRole('tab', { name: 'Chat' }).click();
  const chat = page.getByRole('tabpanel', { name: 'Chat' });
  await chat.locator('#chat-max-tokens').fill('20');
  const prompt = 'Once upon a time, there was a little girl';
  const plain = await ask(page, prompt);
  await chat.getByLabel('Drafting').selectOption('model');
  const drafted = await ask(page, prompt);
  expect(drafted).toBe(plain);
  const line = (await page.getByTestId('chat-speed').textContent()) ?? '';
  const m = /draft stories260K: (\d+) of (\d+) drafted tokens accepted, [\d.]+ tokens per pass/.exec(line);
  expect(m, line).not.toBeNull();
  expect(Number(m![1])).toBe(Number(m![2]));
  expect(Number(m![2])).toBeGreaterThan(0);
  await shoot(page, 'draft-model-chat-1280');
  await page.getByRole('tab', { name: 'Benchmark' }).click();

  // Another vocabulary: the engine's typed error under the select; the target stays loaded (never loaded
  // again: the engine's worker receives a setDraft call and no load), without a draft.
  const worker = page.workers().find((w) => /bench\.worker/.test(w.url()));
  expect(
    worker,
    page
      .workers()
      .map((w) => w.url())
      .join(', '),
  ).toBeDefined();
  await worker!.evaluate(() => {
    const calls: string[] = [];
    (self as unknown as { engineCalls: string[] }).engineCalls = calls;
    self.addEventListener('message', (e: MessageEvent) => {
      const path = (e.data as { path?: unknown } | null)?.path;
      if (Array.isArray(path)) calls.push(path.join('.'));
    });
  });
  const other = makeRandomLlamaGguf({ seed: 7, nLayers: 1, nEmbd: 32, nFF: 64, nHead: 2, nVocab: 300 });
  await page.locator('#plan-draft-file').setInputFiles({
    name: 'other-vocab.gguf',
    mimeType: 'application/octet-stream',
    buffer: Buffer.from(other),
  });
  await expect(status).toHaveText(
    "Draft model refused (invalid_argument): the draft model's vocabulary has 300 tokens but the target's has 512; a draft model needs the target's vocabulary. stories260K stays loaded, without a draft.",
    { timeout: 60_000 },
  );
  const calls = await worker!.evaluate(() => (self as unknown as { engineCalls: string[] }).engineCalls);
  expect(calls).toContain('setDraft');
  expect(calls).not.toContain('load');
  await expect(status).toHaveAttribute('data-code', 'invalid_argument');
  await expect(select).toHaveValue('');
  await expect(select.locator('option', { hasText: '(loaded)' })).toHaveCount(0);
  await expect(page.getByTestId('model-summary').locator('[data-field="model-id"]')).toHaveText(
    'stories260K',
  );
  await page.locator('#plan-draft').scrollIntoViewIfNeeded();
  await shoot(page, 'draft-model-refused-1280');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.locator('#plan-draft').scrollIntoViewIfNeeded();
  await shoot(page, 'draft-model-refused-390');
  await block.scrollIntoViewIfNeeded();
  await shoot(page, 'draft-model-result-390');

  // The target still answers: a plain run after the refusal.
  await page.locator('#plan-warmup').fill('0');
  await page.getByRole('button', { name: 'Run benchmark' }).click();
  await expect(page.getByTestId('run-status')).toHaveText(/^Done: 3 measured runs\./, { timeout: 120_000 });
  await expect(page.getByTestId('result-speculative')).toHaveCount(0);
  // The refusal was said until that run started.
  await expect(status).toHaveText('');

  // A refused draft file goes back to the choice before it (prompt lookup), not to None.
  await select.selectOption('lookup');
  await page.locator('#plan-draft-file').setInputFiles({
    name: 'other-vocab.gguf',
    mimeType: 'application/octet-stream',
    buffer: Buffer.from(other),
  });
  await expect(status).toHaveText(/^Draft model refused \(invalid_argument\): /, { timeout: 60_000 });
  await expect(select).toHaveValue('lookup');
  expect(errors).toEqual([]);
});
