/**
 * The page's chat options for speculative decoding and structured output, in Chromium (SwiftShader) on the
 * built page with stories260K: "Prompt lookup" drafting answers with the same greedy text as None and says
 * its acceptance; the JSON schema box says a bad schema on change (typed message, field marked invalid),
 * and a schema's answer is JSON of the schema's shape, shown pretty-printed and marked valid; both together
 * are refused before anything is sent. The Benchmark tab's Drafting choice runs the plan with prompt lookup,
 * then without, and the result shows acceptance, tokens per target pass and the speed-up. Screenshots at
 * 1280×800 and 390×844.
 */
import { resolve } from 'node:path';
import { expect, type Page, test } from '@playwright/test';
import { stories260kPath } from '../src/testing/models.ts';

const MODEL = stories260kPath();

async function load(page: Page): Promise<void> {
  await page.goto('/');
  await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
  await page.locator('#model-file').setInputFiles(MODEL);
  await expect(page.getByTestId('load-status')).toHaveText(/^Loaded stories260K in /, { timeout: 60_000 });
  await page.getByRole('tab', { name: 'Chat' }).click();
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

/**
 * Pixels to spare in the Drafting select after its widest choice's text and its arrow (negative: the text
 * is cut). The text is measured in the select's own font.
 */
async function draftingRoom(page: Page): Promise<number> {
  return page.locator('#chat-draft').evaluate((sel: HTMLSelectElement) => {
    const cs = getComputedStyle(sel);
    const span = document.createElement('span');
    span.style.cssText = `font: ${cs.font}; white-space: pre; position: absolute; visibility: hidden`;
    document.body.append(span);
    let widest = 0;
    for (const o of Array.from(sel.options)) {
      span.textContent = o.text;
      widest = Math.max(widest, span.getBoundingClientRect().width);
    }
    span.remove();
    // padding-right (28 px) holds the arrow.
    return sel.clientWidth - Number.parseFloat(cs.paddingLeft) - Number.parseFloat(cs.paddingRight) - widest;
  });
}

async function shoot(page: Page, name: string): Promise<void> {
  const dir = process.env.SCREENSHOT_DIR;
  await page.screenshot({ path: dir ? resolve(dir, `${name}.png`) : test.info().outputPath(`${name}.png`) });
}

test.describe.configure({ timeout: 180_000 });

test('chat: prompt-lookup drafting gives the same greedy text; the JSON schema box validates and marks the answer', async ({
  page,
}) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await load(page);
  const chat = page.getByRole('tabpanel', { name: 'Chat' });
  // The Drafting select shows "Prompt lookup" whole at both widths (it was cut at 1280×800; issue 46).
  await chat.getByLabel('Drafting').selectOption('lookup');
  expect(await draftingRoom(page)).toBeGreaterThanOrEqual(0);
  await shoot(page, 'chat-drafting-1280');
  await page.setViewportSize({ width: 390, height: 844 });
  await chat.getByLabel('Drafting').scrollIntoViewIfNeeded();
  expect(await draftingRoom(page)).toBeGreaterThanOrEqual(0);
  await shoot(page, 'chat-drafting-390');
  await page.setViewportSize({ width: 1280, height: 800 });
  await chat.getByLabel('Drafting').selectOption('');
  await chat.locator('#chat-max-tokens').fill('30');
  const prompt = 'Once upon a time, there was a little girl. Once upon a time';
  const plain = await ask(page, prompt);
  expect(plain.length).toBeGreaterThan(20);

  await chat.getByLabel('Drafting').selectOption('lookup');
  const drafted = await ask(page, prompt);
  expect(drafted).toBe(plain);
  await expect(page.getByTestId('chat-speed')).toHaveText(
    /lookup: \d+ of \d+ drafted tokens accepted, [\d.]+ tokens per pass/,
  );

  // A bad schema is said on change, with the field marked; a good one constrains the answer, drafting on.
  await chat.locator('summary', { hasText: 'Structured output' }).click();
  const box = chat.getByLabel('JSON schema');
  await box.fill('{"type": ');
  await box.dispatchEvent('change');
  await expect(chat.locator('#chat-json-schema-status')).toHaveText(/^JSON schema: not JSON \(/);
  await expect(box).toHaveAttribute('aria-invalid', 'true');
  await box.fill('[1, 2]');
  await box.dispatchEvent('change');
  await expect(chat.locator('#chat-json-schema-status')).toHaveText(
    'JSON schema: must be a JSON object, e.g. {"type": "object"}',
  );
  const schema = {
    type: 'object',
    properties: { mood: { enum: ['happy', 'sad'] } },
    required: ['mood'],
    additionalProperties: false,
  };
  await box.fill(JSON.stringify(schema));
  await box.dispatchEvent('change');
  await expect(chat.locator('#chat-json-schema-status')).toHaveText('Schema OK: answers will follow it.');
  await expect(box).not.toHaveAttribute('aria-invalid', 'true');
  await chat.locator('#chat-max-tokens').fill('64');
  const json = await ask(page, 'How is the girl?');
  const answer = chat.locator('[data-role="assistant"]').last();
  await expect(answer).toHaveAttribute('data-json', 'valid');
  const parsed = JSON.parse(json) as { mood: string };
  expect(Object.keys(parsed)).toEqual(['mood']);
  expect(['happy', 'sad']).toContain(parsed.mood);
  expect(json).toBe(JSON.stringify(parsed, null, 2));
  await expect(page.getByTestId('chat-speed')).toHaveText(
    /^Valid JSON \(constrained to the schema\) · Last answer.* · lookup: \d+ of \d+ drafted tokens accepted/,
  );

  await shoot(page, 'chat-options-1280');
  await page.setViewportSize({ width: 390, height: 844 });
  await answer.scrollIntoViewIfNeeded();
  await shoot(page, 'chat-options-390');
  expect(errors).toEqual([]);
});

test('benchmark: prompt-lookup drafting shows acceptance, tokens per target pass and the speed-up', async ({
  page,
}) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.emulateMedia({ reducedMotion: 'reduce' });
  await load(page);
  await page.getByRole('tab', { name: 'Benchmark' }).click();
  await page.locator('#plan-max-tokens').fill('24');
  await page.locator('#plan-runs').fill('1');
  await page.locator('#plan-warmup').fill('1');
  await page.locator('#plan-draft').selectOption('lookup');
  await page.getByRole('button', { name: 'Run benchmark' }).click();
  await expect(page.getByTestId('run-status')).toHaveText(/^Done: 3 measured runs\./, { timeout: 120_000 });
  const block = page.getByTestId('result-speculative');
  await expect(block).toHaveText(
    /^Speculative decoding \(prompt lookup\): [\d.]+\s?% of \d+ drafted tokens accepted, [\d.]+ tokens per target pass; decode [\d.]+× the same runs without drafting \([\d.,]+ tok\/s(: slower with drafting)?\), same output\.$/,
  );
  // The results' first line says the runs drafted (a run stopped early has no block above to say it).
  await expect(page.locator('#results-heading ~ .card__lede')).toContainText(', drafting by prompt lookup.');
  await block.scrollIntoViewIfNeeded();
  await shoot(page, 'bench-speculative-1280');
  await page.setViewportSize({ width: 390, height: 844 });
  await block.scrollIntoViewIfNeeded();
  await shoot(page, 'bench-speculative-390');
  await page.setViewportSize({ width: 1280, height: 800 });

  // Stopped while the baseline without drafting runs: said so, not "after 0 of 3 measured runs".
  await page.getByRole('button', { name: 'Run benchmark' }).click();
  await expect(page.getByTestId('run-status')).toHaveText(/^Baseline without drafting: /);
  await page.getByRole('form', { name: 'Benchmark plan' }).getByRole('button', { name: 'Stop' }).click();
  await expect(page.getByTestId('run-status')).toHaveText(
    'Stopped during the baseline without drafting, before the 3 drafted runs.',
  );
  expect(errors).toEqual([]);
});
