/**
 * The chat widget recovering from what cuts an answer short, in real Chromium from the built library
 * (`dist/widget/`): a reload attribute changed mid-answer, the element taken out and put back mid-answer,
 * the GPU device lost, and the engine's worker gone. Each used to leave the widget "Answering…" for good
 * or "Ready" and failing every message (found by a new user's try); each now ends the answer, loads the
 * model again and answers the next message.
 *
 * The engine worker (a blob: module inlined in the widget) is wrapped so that a message from the test can
 * destroy its GPU devices or close it, as a driver reset or a crashed worker would.
 */
import { expect, type Page, test } from '@playwright/test';
import { stories260kPath } from '../src/testing/models.ts';

const MODEL = stories260kPath();

/** Wraps the widget's module workers: '__destroy' destroys their GPU devices, '__close' ends them. */
async function instrument(p: Page, widgets = 1): Promise<string[]> {
  const errors: string[] = [];
  p.on('pageerror', (e) => errors.push(String(e)));
  await p.addInitScript(() => {
    const patch =
      'self.__devs = []; const o = GPUAdapter.prototype.requestDevice;' +
      'GPUAdapter.prototype.requestDevice = async function (...a) { const d = await o.apply(this, a); self.__devs.push(d); return d; };' +
      "self.addEventListener('message', (e) => {" +
      "  if (e.data === '__close') { e.stopImmediatePropagation(); self.close(); }" +
      "  else if (e.data === '__destroy') { e.stopImmediatePropagation(); for (const d of self.__devs) d.destroy(); }" +
      '});';
    const patchUrl = URL.createObjectURL(new Blob([patch], { type: 'text/javascript' }));
    const w = window as unknown as { __workers: Worker[] };
    w.__workers = [];
    const Orig = window.Worker;
    window.Worker = class extends Orig {
      constructor(url: string | URL, options?: WorkerOptions) {
        const s = String(url);
        const wrapped =
          options?.type === 'module' && s.startsWith('blob:')
            ? URL.createObjectURL(
                new Blob([`import "${patchUrl}"; import "${s}";`], { type: 'text/javascript' }),
              )
            : url;
        super(wrapped, options);
        w.__workers.push(this);
      }
    };
  });
  await p.route('**/models/stories260K.gguf', (route) => route.fulfill({ path: MODEL }));
  await p.route('**/recovery.html', (route) =>
    route.fulfill({
      contentType: 'text/html',
      body:
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>widget recovery</title></head><body>' +
        '<script type="module" src="/widget/webgpu-chat.js"></script>' +
        '<webgpu-chat model="models/stories260K.gguf" temperature="0" max-tokens="400"></webgpu-chat>'.repeat(
          widgets,
        ) +
        '</body></html>',
    }),
  );
  await p.goto('/recovery.html');
  return errors;
}

/** Sends `text` and waits until at least `tokens` tokens of the answer have streamed. */
async function answering(p: Page, text: string, tokens: number): Promise<void> {
  const chat = p.locator('webgpu-chat');
  await chat.evaluate((el) => {
    const w = window as unknown as { __tokens: number };
    w.__tokens = 0;
    el.addEventListener('token', () => w.__tokens++);
  });
  await chat.getByLabel('Message').fill(text);
  await chat.getByLabel('Message').press('Enter');
  await p.waitForFunction((n) => (window as unknown as { __tokens: number }).__tokens >= n, tokens);
}

/** The widget answers a message whole (it is usable again). */
async function answersAgain(p: Page): Promise<void> {
  const chat = p.locator('webgpu-chat');
  await expect(chat).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  // Send was left disabled ("Answering…" for good).
  await expect(chat.getByRole('button', { name: 'Send' })).toBeEnabled();
  await chat.evaluate((el) => el.setAttribute('max-tokens', '8'));
  await chat.getByLabel('Message').fill('Once upon a time');
  await chat.getByLabel('Message').press('Enter');
  await expect(chat.locator('[data-role="assistant"]').last()).toHaveAttribute(
    'data-finish',
    /^(length|stop)$/,
    {
      timeout: 30_000,
    },
  );
  await expect(chat.locator('[part~="stats"]')).toHaveText(/^Last answer: /);
  await expect(chat.getByRole('button', { name: 'Clear' })).toBeEnabled();
}

/** The widget ready, an answer streaming, then `message` posted to the engine worker ('__destroy', '__close'). */
async function midAnswer(p: Page, message: string) {
  const errors = await instrument(p);
  const chat = p.locator('webgpu-chat');
  await expect(chat).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await answering(p, 'Once upon a time', 5);
  await p.evaluate((m) => {
    for (const w of (window as unknown as { __workers: Worker[] }).__workers) w.postMessage(m);
  }, message);
  return { errors, chat };
}

test.describe.configure({ timeout: 150_000 });

test('a reload attribute changed mid-answer, or the element put back mid-answer: the answer ends, the model loads again, the next message is answered', async ({
  page: p,
}) => {
  const errors = await instrument(p);
  const chat = p.locator('webgpu-chat');
  await expect(chat).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await answering(p, 'Once upon a time', 5);
  await chat.evaluate((el) => el.setAttribute('kv-type', 'f32'));
  // The cut answer is marked stopped; "Answering…" is gone.
  await expect(chat.locator('[data-role="assistant"]').first()).toHaveAttribute('data-finish', 'aborted');
  await expect(chat.locator('[part~="stats"]')).not.toHaveText('Answering…');
  await answersAgain(p);

  await chat.evaluate((el) => el.setAttribute('max-tokens', '400'));
  await answering(p, 'The dog', 5);
  await chat.evaluate(async (el) => {
    const parent = el.parentElement as HTMLElement;
    el.remove();
    await new Promise((r) => setTimeout(r, 1000));
    parent.append(el);
  });
  await answersAgain(p);
  expect(errors).toEqual([]);
});

test('the GPU lost mid-answer: the error is said, the model loads again on a new device, the next message is answered', async ({
  page: p,
}) => {
  const { errors, chat } = await midAnswer(p, '__destroy');
  await expect(chat.getByRole('alert')).toContainText(
    /^No answer \(device_lost\): .*Loading the model again…$/,
  );
  // The question stays on screen, marked: it is not part of the conversation any more.
  const question = chat.locator('[data-role="user"]').first();
  await expect(question).toHaveAttribute('data-unanswered', 'true');
  await expect(question.locator('[part~="message-note"]')).toHaveText(
    'Not answered: left out of the conversation.',
  );
  await expect(chat.getByRole('alert')).toContainText(/The model is loaded again\.$/, { timeout: 60_000 });
  await answersAgain(p);
  await expect(chat.locator('[data-role="user"]').last()).not.toHaveAttribute('data-unanswered');
  expect(errors).toEqual([]);
});

test('two widgets on one engine, the GPU lost under one: both load again at once (one new engine), and both answer', async ({
  page: p,
}) => {
  const errors = await instrument(p, 2);
  const [a, b] = [p.locator('webgpu-chat').first(), p.locator('webgpu-chat').nth(1)];
  for (const w of [a, b]) await expect(w).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  // The module build's own instance (already loaded by the page).
  const stats = () =>
    p.evaluate(async () => {
      const url = '/widget/webgpu-chat.js';
      const m = (await import(url)) as { debugStats(): { refs: Record<string, number> } };
      return m.debugStats();
    });
  expect(await stats()).toMatchObject({ engines: 1, created: 1 });
  await a.evaluate((el) => {
    const w = window as unknown as { __tokens: number };
    w.__tokens = 0;
    el.addEventListener('token', () => w.__tokens++);
  });
  await a.getByLabel('Message').fill('Once upon a time');
  await a.getByLabel('Message').press('Enter');
  await p.waitForFunction(() => (window as unknown as { __tokens: number }).__tokens >= 5);
  await p.evaluate(() => {
    for (const w of (window as unknown as { __workers: Worker[] }).__workers) w.postMessage('__destroy');
  });
  await expect(a.getByRole('alert')).toContainText(/^No answer \(device_lost\): /);
  // b sent nothing: it is told, loads again on the new engine, and says why (it used to fail its next
  // message once with device_lost first).
  await expect(b.getByRole('alert')).toHaveText(
    'Another chat on this page lost the engine it shared with this one. The model is loaded again.',
    { timeout: 60_000 },
  );
  for (const w of [a, b]) await expect(w).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  // One new engine, which both hold.
  const after = await stats();
  expect(after).toMatchObject({ engines: 1, created: 2 });
  expect(Object.values(after.refs)).toEqual([2]);
  for (const w of [b, a]) {
    await w.evaluate((el) => el.setAttribute('max-tokens', '8'));
    await w.getByLabel('Message').fill('Once upon a time');
    await w.getByLabel('Message').press('Enter');
    await expect(w.locator('[data-role="assistant"]').last()).toHaveAttribute(
      'data-finish',
      /^(length|stop)$/,
      {
        timeout: 30_000,
      },
    );
  }
  await expect(b.locator('[data-role="user"]')).toHaveCount(1);
  await expect(b.locator('[data-unanswered]')).toHaveCount(0);
  expect(errors).toEqual([]);
});

test('the worker gone mid-answer: Stop ends the answer within 10 s and the model loads again', async ({
  page: p,
}) => {
  const { errors, chat } = await midAnswer(p, '__close');
  await chat.getByRole('button', { name: 'Stop' }).click();
  await expect(chat.getByRole('alert')).toContainText(/^The engine did not stop within 10 s of Stop/, {
    timeout: 20_000,
  });
  await expect(chat.locator('[data-role="assistant"]').first()).toHaveAttribute('data-finish', 'aborted');
  await answersAgain(p);
  expect(errors).toEqual([]);
});

test('cache and fallback take their two values, others are bad settings; a property set to undefined removes its attribute', async ({
  page: p,
}) => {
  await instrument(p);
  const chat = p.locator('webgpu-chat');
  await expect(chat).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await chat.evaluate((el) => {
    const w = el as HTMLElement & { maxTokens: number | undefined; systemPrompt: string | undefined };
    w.maxTokens = undefined;
    w.systemPrompt = undefined;
  });
  expect(
    await chat.evaluate((el) => [el.getAttribute('max-tokens'), el.getAttribute('system-prompt')]),
  ).toEqual([null, null]);
  for (const [name, value, want] of [
    ['cache', 'nope', 'the cache attribute must be "on" or "off", got "nope"'],
    ['fallback', 'nope', 'the fallback attribute must be "message" or "remote", got "nope"'],
  ]) {
    await chat.evaluate((el, [n, v]) => el.setAttribute(n, v), [name, value]);
    await expect(chat).toHaveAttribute('data-state', 'error');
    await expect(chat.getByRole('alert')).toContainText(want);
    await chat.evaluate((el, n) => el.removeAttribute(n), name);
  }
  await expect(chat).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
});
