/**
 * `<webgpu-chat>`'s speculative decoding and tools, end to end in Chromium from the built widget
 * (`dist/widget/`): `draft-model="lookup"` answers with the same greedy text as the widget without it
 * (llama.cpp's continuation, tests/golden) and its counts in the `done` event, as does a `draft-model`
 * GGUF URL (the model as its own draft: nearly every draft accepted); a bad `draft-max`, a draft on another engine or a
 * `responseFormat` on our engine (no grammar compiler in the widget build) is an error in the widget; the
 * `tools` property gives a `toolcall` event with OpenAI's `tool_calls` through the remote engine against
 * the scripted vLLM server (src/testing/openai-server.ts).
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, type Page, test } from '@playwright/test';
import { stories260kPath } from '../src/testing/models.ts';
import { startOpenAiServer } from '../src/testing/openai-server.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const golden = JSON.parse(readFileSync(resolve(ROOT, 'tests/golden/stories260K.json'), 'utf8')) as {
  generation: { cases: { prompt: string; outputText: string }[] };
};
const GOLDEN = golden.generation.cases[0];

const html = (body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>widget draft test</title>` +
  `<script type="module" src="/widget/webgpu-chat.js"></script></head><body>${body}</body></html>`;

async function open(p: Page, body: string): Promise<string[]> {
  const errors: string[] = [];
  p.on('pageerror', (e) => errors.push(String(e)));
  await p.route('**/models/stories260K.gguf', (route) => route.fulfill({ path: stories260kPath() }));
  await p.route('**/draft-test.html', (route) =>
    route.fulfill({ contentType: 'text/html', body: html(body) }),
  );
  await p.goto('/draft-test.html');
  return errors;
}

/** Sends `text` to the widget `#id` and resolves with the `done` (or `error`) event's detail. */
function ask(p: Page, id: string, text: string) {
  return p.evaluate(
    ([id, text]) =>
      new Promise<{
        type: string;
        detail: {
          text?: string;
          message?: string;
          code?: string;
          outputTokens?: number;
          speculative?: { drafted: number; accepted: number; targetPasses: number };
        };
      }>((resolve) => {
        const el = document.getElementById(id) as HTMLElement & { send(t: string): Promise<unknown> };
        el.addEventListener('done', (e) => resolve({ type: 'done', detail: (e as CustomEvent).detail }), {
          once: true,
        });
        el.addEventListener(
          'error',
          (e) => resolve({ type: 'error', detail: (e as unknown as CustomEvent).detail }),
          {
            once: true,
          },
        );
        void el.send(text);
      }),
    [id, text] as const,
  );
}

test.describe.configure({ timeout: 120_000 });

test('draft-model="lookup" answers with the same greedy text as without it', async ({
  page: p,
}, testInfo) => {
  // The error events of the widgets that refuse their settings at load.
  await p.addInitScript(() => {
    const w = window as unknown as { __loadErrors: Record<string, unknown> };
    w.__loadErrors = {};
    document.addEventListener('error', (e) => {
      w.__loadErrors[(e.target as HTMLElement).id] = (e as unknown as CustomEvent).detail;
    });
  });
  const M = 'model="/models/stories260K.gguf"';
  const errors = await open(
    p,
    `<webgpu-chat id="plain" ${M} max-tokens="40"></webgpu-chat>` +
      `<webgpu-chat id="lookup" ${M} max-tokens="40" draft-model="lookup" draft-max="4"></webgpu-chat>` +
      // Generation settings are checked at load, as context-length and kv-type are: "Bad settings".
      `<webgpu-chat id="hot" ${M} max-tokens="40" temperature="hot"></webgpu-chat>` +
      `<webgpu-chat id="mt" ${M} max-tokens="abc"></webgpu-chat>` +
      `<webgpu-chat id="dm" ${M} draft-model="lookup" draft-max="99"></webgpu-chat>` +
      `<webgpu-chat id="gpu" ${M} engine="gpu"></webgpu-chat>`,
  );
  for (const id of ['plain', 'lookup'])
    await expect(p.locator(`#${id}`)).toHaveAttribute('data-state', 'ready', { timeout: 90_000 });
  const refused = {
    hot: 'the temperature attribute must be a finite number ≥ 0 and ≤ 2, got "hot"',
    mt: 'the max-tokens attribute must be an integer ≥ 1, got "abc"',
    dm: 'the draft-max attribute must be an integer ≥ 1 and ≤ 16, got "99"',
    gpu: 'the engine attribute must be one of webgpu, wllama, auto, remote, webllm, got "gpu"',
  };
  const loadErrors = await p.evaluate(() => (window as unknown as { __loadErrors: unknown }).__loadErrors);
  for (const [id, message] of Object.entries(refused)) {
    const el = p.locator(`#${id}`);
    await expect(el).toHaveAttribute('data-state', 'error');
    await expect(el.getByRole('status')).toHaveText('Bad settings');
    await expect(el.getByRole('alert')).toHaveText(message);
    await expect(el.getByLabel('Message')).toBeDisabled();
    expect((loadErrors as Record<string, unknown>)[id]).toEqual({
      code: 'invalid_argument',
      message,
      phase: 'load',
    });
  }
  const dir = process.env.SCREENSHOT_DIR;
  for (const [w, h] of [
    [1280, 800],
    [390, 844],
  ]) {
    await p.setViewportSize({ width: w, height: h });
    for (const id of ['hot', 'gpu'])
      await p.locator(`#${id}`).screenshot({
        path: dir
          ? resolve(dir, `widget-bad-${id}-${w}.png`)
          : testInfo.outputPath(`widget-bad-${id}-${w}.png`),
      });
  }
  // Fixed after the refusal: the widget loads (the engine #plain has).
  await p.locator('#hot').evaluate((el) => el.setAttribute('temperature', '0'));
  await expect(p.locator('#hot')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
  await expect(p.locator('#hot').getByRole('alert')).toBeHidden();
  const plain = await ask(p, 'plain', GOLDEN.prompt);
  const lookup = await ask(p, 'lookup', GOLDEN.prompt);
  expect(plain.type, JSON.stringify(plain.detail)).toBe('done');
  expect(lookup.type, JSON.stringify(lookup.detail)).toBe('done');
  expect(plain.detail.text!.length).toBeGreaterThan(60);
  expect(GOLDEN.outputText.startsWith(plain.detail.text!)).toBe(true);
  expect(lookup.detail.text).toBe(plain.detail.text);
  // The draft reached the engine: its counts in the done event, and said under the log.
  expect(plain.detail.speculative).toBeUndefined();
  const spec = lookup.detail.speculative!;
  expect(spec.accepted).toBeLessThanOrEqual(spec.drafted);
  expect(spec.targetPasses + spec.accepted).toBeGreaterThanOrEqual(lookup.detail.outputTokens! - 1);
  await expect(p.locator('#lookup')).toContainText(
    `${spec.accepted} of ${spec.drafted} drafted tokens accepted`,
  );

  // The widget build has no grammar compiler: a responseFormat on our engine is a clear `unsupported` error.
  await p.locator('#plain').evaluate((el) => {
    (el as unknown as { responseFormat: unknown }).responseFormat = { type: 'json_object' };
  });
  const constrained = await ask(p, 'plain', 'Once');
  expect(constrained).toMatchObject({ type: 'error', detail: { code: 'unsupported' } });
  await expect(p.locator('#plain').getByRole('alert')).toContainText('grammar library');

  // draft-max out of range: an error in the widget, naming the attribute; nothing sent.
  await p.locator('#lookup').evaluate((el) => el.setAttribute('draft-max', '17'));
  const bad = await ask(p, 'lookup', 'Once');
  expect(bad).toMatchObject({ type: 'error', detail: { code: 'invalid_argument' } });
  expect(bad.detail.message).toMatch(/draft-max attribute must be an integer/);
  await expect(p.locator('#lookup').getByRole('alert')).toContainText('draft-max');
  expect(errors).toEqual([]);
});

test('draft-model as a GGUF URL (the model itself): the same greedy text in fewer target passes', async ({
  page: p,
}) => {
  const errors = await open(
    p,
    '<webgpu-chat id="d" model="/models/stories260K.gguf" max-tokens="40" draft-model="/models/stories260K.gguf" draft-max="3"></webgpu-chat>',
  );
  await expect(p.locator('#d')).toHaveAttribute('data-state', 'ready', { timeout: 90_000 });
  const r = await ask(p, 'd', GOLDEN.prompt);
  expect(r.type, JSON.stringify(r.detail)).toBe('done');
  expect(r.detail.text!.length).toBeGreaterThan(60);
  expect(GOLDEN.outputText.startsWith(r.detail.text!)).toBe(true);
  const spec = r.detail.speculative!;
  // A copy of the target drafts its own tokens: nearly all accepted, several tokens per target pass.
  expect(spec.drafted).toBeGreaterThan(0);
  expect(spec.accepted / spec.drafted).toBeGreaterThan(0.9);
  expect(spec.targetPasses).toBeLessThan(r.detail.outputTokens! - 1);
  expect(errors).toEqual([]);
});

test('a draft-model that does not load is named as the draft (it read as the model failing)', async ({
  page: p,
}) => {
  await p.route('**/models/missing-draft.gguf', (route) => route.fulfill({ status: 404, body: 'not found' }));
  const errors = await open(
    p,
    '<webgpu-chat id="m" model="/models/stories260K.gguf" draft-model="/models/missing-draft.gguf"></webgpu-chat>',
  );
  const chat = p.locator('#m');
  await expect(chat).toHaveAttribute('data-state', 'error', { timeout: 90_000 });
  await expect(chat.getByRole('alert')).toHaveText(
    /^Loading the model failed: the draft model \(draft-model="\/models\/missing-draft\.gguf"\) did not load: .*404/,
  );
  expect(errors).toEqual([]);
});

test('tools: a toolcall event with OpenAI tool_calls through the remote engine (scripted vLLM server)', async ({
  page: p,
  baseURL,
}) => {
  const server = await startOpenAiServer({
    models: ['tool-model'],
    tokens: [' Let', ' me', ' look.'],
    toolCalls: [{ name: 'get_weather', arguments: '{"city": "Paris"}' }],
  });
  try {
    // Fetches from this route-fulfilled page straight to the loopback server never arrive (its log stays
    // empty; Chromium's Private Network Access, it seems): the server is reached through a route on the
    // page's origin, which Playwright forwards from Node (the stream arrives whole, which is enough here).
    await p.route('**/vllm/v1/**', async (route) => {
      const url = new URL(route.request().url());
      const response = await route.fetch({ url: `${server.url}${url.pathname.replace('/vllm', '')}` });
      await route.fulfill({ response });
    });
    const errors = await open(
      p,
      `<webgpu-chat id="r" engine="remote" base-url="${baseURL}/vllm" model="tool-model"></webgpu-chat>` +
        `<webgpu-chat id="w" engine="remote" base-url="${baseURL}/vllm" model="tool-model" draft-model="lookup"></webgpu-chat>`,
    );
    await expect(p.locator('#r')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'The weather in a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    const got = await p.evaluate(
      (tools) =>
        new Promise<{ call: unknown; done: unknown }>((resolve) => {
          const el = document.getElementById('r') as HTMLElement & {
            tools: unknown;
            send(t: string): Promise<unknown>;
          };
          el.tools = tools;
          let call: unknown;
          el.addEventListener('toolcall', (e) => {
            call = (e as CustomEvent).detail;
          });
          el.addEventListener('done', (e) => resolve({ call, done: (e as CustomEvent).detail }), {
            once: true,
          });
          void el.send('Weather in Paris?');
        }),
      tools,
    );
    // The server got the tools (OpenAI's wire format) and the widget reports vLLM's parsed call.
    expect(server.bodies.at(-1)?.tools).toEqual(tools);
    expect(got.call).toEqual({
      toolCalls: [
        {
          id: 'chatcmpl-tool-0',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city": "Paris"}' },
        },
      ],
      text: ' Let me look.',
    });
    await expect(p.locator('#r [data-role="assistant"] .msg__body')).toHaveText(
      ' Let me look.\nget_weather({"city": "Paris"})',
    );
    // A draft model on an engine without drafting: said in the widget, before anything loads.
    await expect(p.locator('#w')).toHaveAttribute('data-state', 'error');
    await expect(p.locator('#w').getByRole('alert')).toContainText(
      'draft-model (speculative decoding) needs engine="webgpu"',
    );
    expect(errors).toEqual([]);
  } finally {
    await server.close();
  }
});
