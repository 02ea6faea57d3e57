/**
 * The embeddable chat widget end to end in real Chromium (SwiftShader without a GPU), from the built
 * library (`dist/widget/`, `npm run build:widget`): the README's snippet on a plain page chats with
 * stories260K and shows llama.cpp's greedy text; Stop; markup stays text; two widgets share one engine
 * (one worker) and removing both terminates it; the WebGPU-missing fallback; the message box disabled
 * while the model loads (a 390 px screenshot); demo screenshots.
 *
 * The model is found by src/testing/models.ts ($STORIES260K, models/, ../shared/models/) and served to the page by
 * `page.route`. Screenshots go to `$SCREENSHOT_DIR` when set, else to the test's output folder.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, type Page, type TestInfo, test } from '@playwright/test';
import { stories260kPath } from '../src/testing/models.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MODEL = stories260kPath();
const golden = JSON.parse(readFileSync(resolve(ROOT, 'tests/golden/stories260K.json'), 'utf8')) as {
  generation: { cases: { prompt: string; outputText: string }[] };
};
const GOLDEN = golden.generation.cases[0];

/** The README's ```html block after the `widget-snippet` marker, as it stands. */
function readmeSnippet(): string {
  const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
  const m = /<!-- widget-snippet[^>]*-->\s*```html\n([\s\S]*?)```/.exec(readme);
  if (!m) throw new Error('README.md has no widget snippet');
  return m[1];
}

const page = (body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>widget test</title>` +
  `<meta name="viewport" content="width=device-width, initial-scale=1"></head><body>${body}</body></html>`;

/** Counts Worker construction and termination on the page (and any dialog or page error). */
async function instrument(p: Page): Promise<string[]> {
  const errors: string[] = [];
  p.on('pageerror', (e) => errors.push(String(e)));
  p.on('dialog', (d) => {
    errors.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  await p.addInitScript(() => {
    const w = window as unknown as { __workers: { created: number; terminated: number } };
    w.__workers = { created: 0, terminated: 0 };
    const Orig = window.Worker;
    window.Worker = class extends Orig {
      constructor(url: string | URL, options?: WorkerOptions) {
        super(url, options);
        w.__workers.created++;
      }
      override terminate(): void {
        w.__workers.terminated++;
        super.terminate();
      }
    };
  });
  await p.route('**/models/stories260K.gguf', (route) => route.fulfill({ path: MODEL }));
  return errors;
}

async function servePage(p: Page, path: string, html: string): Promise<void> {
  await p.route(`**${path}`, (route) => route.fulfill({ contentType: 'text/html', body: html }));
  await p.goto(path);
}

const workers = (p: Page) =>
  p.evaluate(() => (window as unknown as { __workers: { created: number; terminated: number } }).__workers);

async function shoot(p: Page, testInfo: TestInfo, name: string): Promise<void> {
  const dir = process.env.SCREENSHOT_DIR;
  await p.screenshot({ path: dir ? resolve(dir, `${name}.png`) : testInfo.outputPath(`${name}.png`) });
}

test.describe.configure({ timeout: 90_000 });

test("the README's snippet chats with stories260K: greedy text, Stop, markup stays text", async ({
  page: p,
}, testInfo) => {
  const errors = await instrument(p);
  await servePage(p, '/snippet.html', page(readmeSnippet()));
  const chat = p.locator('webgpu-chat');
  await expect(chat).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(chat.getByRole('heading')).toHaveText('Chat with stories260K');
  await expect(chat.getByRole('status')).toHaveText('Ready');
  expect(await workers(p)).toEqual({ created: 1, terminated: 0 });

  // Greedy, 20 tokens, through the attributes; the page listens to the events.
  await chat.evaluate((el) => {
    el.setAttribute('temperature', '0');
    el.setAttribute('max-tokens', '20');
    const w = window as unknown as { __events: { type: string; detail: unknown }[] };
    w.__events = [];
    for (const type of ['token', 'done', 'error'])
      document.addEventListener(type, (e) => w.__events.push({ type, detail: (e as CustomEvent).detail }));
  });
  const input = chat.getByLabel('Message');
  await input.fill(GOLDEN.prompt);
  await input.press('Enter');
  const answer = chat.locator('[data-role="assistant"]').last();
  await expect(answer).toHaveAttribute('data-finish', 'length', { timeout: 30_000 });
  const text = (await answer.locator('.msg__body').textContent()) ?? '';
  expect(text.length).toBeGreaterThanOrEqual(60);
  expect(GOLDEN.outputText.startsWith(text), `"${text}" should start llama.cpp's continuation`).toBe(true);
  await expect(chat.locator('[data-role="user"] .msg__body')).toHaveText(GOLDEN.prompt);
  await expect(chat.locator('[part~="stats"]')).toHaveText(
    /^Last answer: 20 tokens \(max tokens\) · [\d.,]+ tok\/s at 25 tokens of context$/,
  );
  const events = await p.evaluate(
    () => (window as unknown as { __events: { type: string; detail: Record<string, unknown> }[] }).__events,
  );
  expect(events.filter((e) => e.type === 'token')).toHaveLength(20);
  const done = events.find((e) => e.type === 'done')?.detail;
  expect(done).toMatchObject({
    text,
    finishReason: 'length',
    outputTokens: 20,
    promptTokens: 5,
    contextTokens: 25,
  });
  expect(events.filter((e) => e.type === 'token').at(-1)?.detail.answer).toBe(text);

  // Clear, then Stop cuts a long answer short.
  await chat.getByRole('button', { name: 'Clear' }).click();
  await expect(chat.locator('[data-role]')).toHaveCount(0);
  await expect(input).toBeFocused();
  await chat.evaluate((el) => el.setAttribute('max-tokens', '450'));
  await input.fill(GOLDEN.prompt);
  await chat.getByRole('button', { name: 'Send' }).click();
  const long = chat.locator('[data-role="assistant"]').last();
  await expect(long.locator('.msg__body')).not.toBeEmpty({ timeout: 30_000 });
  await chat.getByRole('button', { name: 'Stop' }).click();
  await expect(long).toHaveAttribute('data-finish', /^(aborted|stop)$/);
  if ((await long.getAttribute('data-finish')) === 'aborted') {
    await expect(chat.locator('[part~="stats"]')).toContainText('(stopped)');
    await expect(long).toContainText('Stopped.');
  }
  await expect(chat.getByRole('button', { name: 'Stop' })).toBeDisabled();
  await expect(chat.getByRole('button', { name: 'Send' })).toBeEnabled();

  // A bad setting is an error in the widget, not a silent default: nothing is sent, the text stays.
  const before = await chat.locator('[data-role]').count();
  await chat.evaluate((el) => el.setAttribute('temperature', 'abc'));
  await input.fill(GOLDEN.prompt);
  await input.press('Enter');
  await expect(chat.getByRole('alert')).toContainText('the temperature attribute must be a finite number');
  await expect(chat.getByRole('alert')).toHaveAttribute('data-code', 'invalid_argument');
  await expect(chat.locator('[data-role]')).toHaveCount(before);
  await expect(input).toHaveValue(GOLDEN.prompt);
  await chat.evaluate((el) => {
    el.setAttribute('temperature', '0');
    el.setAttribute('max-tokens', '2.5');
  });
  await input.press('Enter');
  await expect(chat.getByRole('alert')).toContainText('the max-tokens attribute must be an integer');
  await chat.evaluate((el) => el.setAttribute('max-tokens', '20'));
  await input.fill('');

  // Markup in a message is text, in the question and in the answer (the model continues it).
  const markup = '<img src=x onerror=alert(1)>';
  await chat.getByRole('button', { name: 'Clear' }).click();
  await chat.evaluate((el) => el.setAttribute('max-tokens', '8'));
  await input.fill(markup);
  await input.press('Enter');
  await expect(chat.locator('[data-role="assistant"]').last()).toHaveAttribute(
    'data-finish',
    /^(stop|length)$/,
    {
      timeout: 30_000,
    },
  );
  await expect(chat.locator('[data-role="user"] .msg__body')).toHaveText(markup);
  const imgs = await chat.evaluate((el) => el.shadowRoot?.querySelectorAll('img').length ?? -1);
  expect(imgs).toBe(0);
  expect(await p.locator('img').count()).toBe(0);

  // A conversation longer than the context forgets its oldest turns instead of failing. (A new context
  // length is another engine: the old one's worker is terminated.)
  await chat.evaluate((el) => {
    el.setAttribute('context-length', '64');
    el.setAttribute('max-tokens', '40');
  });
  await expect(chat).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  expect(await workers(p)).toEqual({ created: 2, terminated: 1 });
  await chat.getByRole('button', { name: 'Clear' }).click();
  for (let turn = 0; turn < 3; turn++) {
    await input.fill(GOLDEN.prompt);
    await input.press('Enter');
    await expect(chat.locator('[data-role="assistant"]').nth(turn)).toHaveAttribute(
      'data-finish',
      /^(stop|length)$/,
      { timeout: 30_000 },
    );
  }
  await expect(chat.getByRole('alert')).toBeHidden();
  const kept = await chat.evaluate(
    (el) => (el as unknown as { conversation: unknown[] }).conversation.length,
  );
  expect(kept).toBeLessThan(6);

  // The log ends in view after an answer, its "Cut at max tokens." note included, and stays at its end when
  // the page is resized (1280×800, then 390×844).
  const log = chat.getByRole('log');
  const gapBelow = () => log.evaluate((e) => e.scrollHeight - e.scrollTop - e.clientHeight);
  await expect(chat.locator('[data-role="assistant"]').last()).toHaveAttribute('data-finish', 'length');
  await expect(chat.locator('.msg__note').last()).toHaveText('Cut at max tokens.');
  expect(await log.evaluate((e) => e.scrollHeight > e.clientHeight)).toBe(true);
  await expect.poll(gapBelow).toBeLessThanOrEqual(1);
  await shoot(p, testInfo, 'widget-end-1280');
  await p.setViewportSize({ width: 390, height: 844 });
  await expect.poll(gapBelow).toBeLessThanOrEqual(1);
  // The speed line, two lines at this width, keeps the height it needs (it was squeezed to one line's and
  // its second line ran under the message box).
  const stats = chat.locator('.stats');
  const fit = await stats.evaluate((e) => {
    const r = document.createRange();
    r.selectNodeContents(e);
    const lines = new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size;
    return { lines, box: e.clientHeight, content: e.scrollHeight };
  });
  expect(fit.lines).toBeGreaterThanOrEqual(2);
  expect(fit.box).toBeGreaterThanOrEqual(fit.content);
  await shoot(p, testInfo, 'widget-end-390');

  // A message longer than the context: the notice names the widget's attribute, and no empty answer is left.
  const answers = await chat.locator('[data-role="assistant"]').count();
  await input.fill('Once upon a time '.repeat(2120));
  await input.press('Enter');
  await expect(chat.getByRole('alert')).toHaveAttribute('data-code', 'context_overflow');
  await expect(chat.getByRole('alert')).toContainText('set a larger context-length attribute on the widget');
  await expect(chat.getByRole('alert')).not.toContainText('contextLength');
  await expect(chat.locator('[data-role="assistant"]')).toHaveCount(answers);
  await expect(chat.locator('[data-role="assistant"] .msg__body:empty')).toHaveCount(0);
  await expect.poll(gapBelow).toBeLessThanOrEqual(1);
  await shoot(p, testInfo, 'widget-overflow-390');
  await p.setViewportSize({ width: 1280, height: 800 });
  await expect.poll(gapBelow).toBeLessThanOrEqual(1);
  await shoot(p, testInfo, 'widget-overflow-1280');
  expect(errors).toEqual([]);
});

test('two widgets share one engine; removing both terminates its worker (classic script build)', async ({
  page: p,
}) => {
  const errors = await instrument(p);
  await servePage(
    p,
    '/two.html',
    page(
      '<script src="/widget/webgpu-chat.iife.js"></script>' +
        '<webgpu-chat id="a" model="/models/stories260K.gguf" max-tokens="12"></webgpu-chat>' +
        '<webgpu-chat id="b" model="/models/stories260K.gguf" max-tokens="12" heading="Second"></webgpu-chat>',
    ),
  );
  const a = p.locator('#a');
  const b = p.locator('#b');
  await expect(a).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(b).toHaveAttribute('data-state', 'ready');
  expect(await workers(p)).toEqual({ created: 1, terminated: 0 });
  const stats = () =>
    p.evaluate(() =>
      (
        window as unknown as { WebGpuChat: { debugStats(): Record<string, unknown> } }
      ).WebGpuChat.debugStats(),
    );
  expect(await stats()).toMatchObject({ engines: 1, workers: { created: 1, live: 1 } });

  // Both ask at once: the shared engine answers them in turn, each gets the greedy text.
  // (Through `send()`: two concurrent mouse clicks would interleave their down/up events.)
  await p.evaluate((prompt) => {
    for (const el of document.querySelectorAll('webgpu-chat'))
      void (el as unknown as { send(text: string): Promise<unknown> }).send(prompt);
  }, GOLDEN.prompt);
  for (const w of [a, b])
    await expect(w.locator('[data-role="assistant"]')).toHaveAttribute('data-finish', 'length', {
      timeout: 30_000,
    });
  const ta = await a.locator('[data-role="assistant"] .msg__body').textContent();
  const tb = await b.locator('[data-role="assistant"] .msg__body').textContent();
  expect(ta).toBe(tb);
  expect(GOLDEN.outputText.startsWith(ta ?? '')).toBe(true);

  // Removing one keeps the engine; removing the other frees it.
  await p.evaluate(() => document.getElementById('a')?.remove());
  await p.waitForTimeout(50);
  expect(await workers(p)).toEqual({ created: 1, terminated: 0 });
  await expect(b).toHaveAttribute('data-state', 'ready');
  await b.getByLabel('Message').fill('The little cat');
  await b.getByLabel('Message').press('Enter');
  await expect(b.locator('[data-role="assistant"]').nth(1)).toHaveAttribute(
    'data-finish',
    /^(stop|length)$/,
    {
      timeout: 30_000,
    },
  );
  await p.evaluate(() => document.getElementById('b')?.remove());
  await expect.poll(() => workers(p)).toEqual({ created: 1, terminated: 1 });
  expect(await stats()).toMatchObject({ engines: 0, workers: { created: 1, live: 0 } });

  // A widget added later (through `mount`) loads the model again in a fresh worker.
  await p.evaluate(() => {
    const api = (window as unknown as { WebGpuChat: { mount(t: Element, o: object): HTMLElement } })
      .WebGpuChat;
    api.mount(document.body, { model: '/models/stories260K.gguf', maxTokens: 5, heading: 'Mounted' }).id =
      'c';
  });
  await expect(p.locator('#c')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(p.locator('#c')).toHaveAttribute('max-tokens', '5');
  await expect(p.locator('#c').getByRole('heading')).toHaveText('Mounted');
  expect(await workers(p)).toEqual({ created: 2, terminated: 1 });
  expect(errors).toEqual([]);
});

/** A fake OpenAI-compatible server at `/fake/v1` whose answer carries markup. */
async function fakeServer(p: Page): Promise<void> {
  await p.route('**/fake/v1/models', (route) =>
    route.fulfill({ json: { object: 'list', data: [{ id: 'fake-model', object: 'model' }] } }),
  );
  const chunk = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
  await p.route('**/fake/v1/chat/completions', (route) =>
    route.fulfill({
      contentType: 'text/event-stream',
      body:
        chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello' } }] }) +
        chunk({ choices: [{ index: 0, delta: { content: ' <img src=x onerror=alert(1)>' } }] }) +
        chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) +
        chunk({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } }) +
        'data: [DONE]\n\n',
    }),
  );
}

test('without WebGPU the widget says why (fallback="message") or uses the remote server (fallback="remote")', async ({
  page: p,
  baseURL,
}) => {
  await instrument(p);
  await fakeServer(p);
  await p.addInitScript(() => {
    // biome-ignore lint/suspicious/noExplicitAny: removing the WebGPU entry point for this test
    delete (Navigator.prototype as any).gpu;
  });
  await servePage(
    p,
    '/nogpu.html',
    page(
      '<script type="module" src="/widget/webgpu-chat.js"></script>' +
        '<webgpu-chat id="a" model="/models/stories260K.gguf" fallback="message"></webgpu-chat>' +
        `<webgpu-chat id="b" model="/models/stories260K.gguf" fallback="remote" base-url="${baseURL}/fake"></webgpu-chat>` +
        '<webgpu-chat id="c" engine="webllm" model="SmolLM2-360M-Instruct-q4f16_1-MLC"></webgpu-chat>' +
        `<webgpu-chat id="d" engine="remote" model="fake-model" base-url="${baseURL}/fake"></webgpu-chat>`,
    ),
  );
  const a = p.locator('#a');
  await expect(a).toHaveAttribute('data-state', 'error');
  await expect(a.getByRole('alert')).toContainText('navigator.gpu is missing');
  await expect(a.getByRole('button', { name: 'Send' })).toBeDisabled();
  await expect(a.getByLabel('Message')).toBeDisabled();
  await expect(a.getByLabel('Message')).toHaveAttribute(
    'placeholder',
    'Not available: see the message above.',
  );
  // Its empty log does not invite a message the widget cannot take (it said "Ask something to start.").
  expect(await a.getByRole('log').evaluate((e) => getComputedStyle(e, '::before').content)).toBe('none');
  await expect(p.locator('#c').getByRole('alert')).toContainText('not available in this build');
  const engines = await p.evaluate(async () => {
    const m = (await import('/widget/webgpu-chat.js' as string)) as { availableEngines(): string[] };
    return m.availableEngines();
  });
  const b = p.locator('#b');
  if (engines.includes('remote')) {
    await expect(b).toHaveAttribute('data-state', 'ready');
    await expect(b.getByRole('alert')).toContainText('Using the remote server: this browser does not');
    await b.getByLabel('Message').fill('Hi');
    await b.getByLabel('Message').press('Enter');
    const answer = b.locator('[data-role="assistant"]');
    await expect(answer).toHaveAttribute('data-finish', 'stop');
    await expect(answer.locator('.msg__body')).toHaveText('Hello <img src=x onerror=alert(1)>');
    expect(await b.evaluate((el) => el.shadowRoot?.querySelectorAll('img').length)).toBe(0);
    // engine="remote" needs no WebGPU at all.
    const d = p.locator('#d');
    await expect(d).toHaveAttribute('data-state', 'ready');
    await expect(d.getByRole('heading')).toHaveText('Chat with fake-model');
    await expect(d.getByRole('alert')).toBeHidden();
    await d.getByLabel('Message').fill('Hi');
    await d.getByLabel('Message').press('Enter');
    await expect(d.locator('[data-role="assistant"] .msg__body')).toHaveText(
      'Hello <img src=x onerror=alert(1)>',
    );
  } else
    await expect(b.getByRole('alert')).toContainText('The remote fallback is not available in this build');
  expect(await workers(p)).toEqual({ created: 0, terminated: 0 });
});

test('while the model loads the message box is disabled and says so; once ready it sends', async ({
  page: p,
}, testInfo) => {
  const errors = await instrument(p);
  await p.setViewportSize({ width: 390, height: 844 });
  // The model's bytes are held back until the loading state has been checked (and photographed).
  let release = () => {};
  const held = new Promise<void>((ok) => {
    release = ok;
  });
  await p.route('**/slow-models/stories260K.gguf', async (route) => {
    await held;
    await route.fulfill({ path: MODEL });
  });
  await servePage(
    p,
    '/loading.html',
    page(
      '<script type="module" src="/widget/webgpu-chat.js"></script>' +
        '<webgpu-chat model="/slow-models/stories260K.gguf" temperature="0" max-tokens="8"></webgpu-chat>',
    ),
  );
  const chat = p.locator('webgpu-chat');
  const input = chat.getByLabel('Message');
  await expect(chat).toHaveAttribute('data-state', 'loading');
  await expect(input).toBeDisabled();
  await expect(input).toHaveAttribute('placeholder', 'Loading the model…');
  await expect(chat.getByRole('button', { name: 'Send' })).toBeDisabled();
  await shoot(p, testInfo, 'widget-loading-390');
  release();
  await expect(chat).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(input).toBeEnabled();
  await expect(input).toHaveAttribute(
    'placeholder',
    'Write a message. Enter sends, Shift+Enter adds a line.',
  );
  await input.fill('Once');
  await input.press('Enter');
  await expect(chat.locator('[data-role="assistant"]')).toHaveAttribute('data-finish', /^(stop|length)$/, {
    timeout: 30_000,
  });
  expect(errors).toEqual([]);
});

test('the demo page at desktop and phone width', async ({ page: p }, testInfo) => {
  const errors = await instrument(p);
  await p.goto('/widget-demo.html');
  for (const id of ['light', 'dark'])
    await expect(p.locator(`#${id}`)).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  expect(await workers(p)).toEqual({ created: 1, terminated: 0 });
  // The events log names the model (its file), not its architecture (GGUF general.name is 'llama').
  await expect(p.locator('#events li').first()).toHaveText(
    /^(light|dark) ready: stories260K \(llama, 5 layers, context \d+\)$/,
  );
  // The host page's font is a sans-serif stack, not a serif fallback.
  expect(await p.evaluate(() => getComputedStyle(document.body).fontFamily)).toMatch(/sans-serif$/);
  const light = p.locator('#light');
  await light.getByLabel('Message').fill('The little cat');
  await light.getByLabel('Message').press('Enter');
  await expect(light.locator('[data-role="assistant"]')).toHaveAttribute('data-finish', /^(stop|length)$/, {
    timeout: 30_000,
  });
  // The answer starts at its first word: SentencePiece's space prefix of its first token is dropped.
  expect(await light.locator('[data-role="assistant"] .msg__body').textContent()).toMatch(/^\S/);
  // The page's `p { color: crimson }` does not reach the widget's text.
  const color = await light.locator('[part~="stats"]').evaluate((e) => getComputedStyle(e).color);
  expect(color).not.toBe('rgb(220, 20, 60)');
  // Keyboard: Tab from the message box reaches Send, then (Stop disabled) Clear.
  await light.getByLabel('Message').focus();
  await light.getByLabel('Message').fill('Once');
  await p.keyboard.press('Tab');
  await expect(light.getByRole('button', { name: 'Send' })).toBeFocused();
  await p.keyboard.press('Tab');
  await expect(light.getByRole('button', { name: 'Clear' })).toBeFocused();
  await shoot(p, testInfo, 'widget-demo-1280');
  await p.setViewportSize({ width: 390, height: 844 });
  await p.evaluate(() => window.scrollTo(0, 0));
  await shoot(p, testInfo, 'widget-demo-390');
  const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
  // The snippet wraps at phone width: nothing of it is cut off or scrolled out of its box.
  const snippet = await p.locator('pre').evaluate((e) => [e.scrollWidth, e.clientWidth]);
  expect(snippet[0]).toBeLessThanOrEqual(snippet[1]);
  expect(errors).toEqual([]);
});
