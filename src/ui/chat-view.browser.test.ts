/**
 * The chat tab's structured output on the CPU engine (wllama cannot constrain): the schema box says so,
 * and a send with a schema is refused before anything reaches the engine, in real Chromium (no model: the
 * session's wllama engine is absent, so a request that got through would fail with `not_loaded` instead).
 * And, with a stand-in engine, the speed line says the drafting of the last and the first answer, and every
 * wrong setting is named at once when Send is pressed.
 */
import { expect, it } from 'vitest';
import type { BenchWorkerEngine } from '../bench/worker-api.ts';
import { EngineError } from '../core/errors.ts';
import type { ChatRequest, GenerateResult, TokenEvent } from '../core/types.ts';
import { checkPromptLength } from '../model/tokenizer/prompt-bound.ts';
import './app.css';
import { ChatView } from './chat-view.ts';
import { type LoadedModel, Session } from './session.ts';

it('a JSON schema on the CPU engine is refused before sending, and the schema box says why', async () => {
  const session = new Session();
  session.backend = 'wllama';
  session.model = { id: 'stories260K', info: { contextLength: 512 } } as unknown as LoadedModel;
  const chat = new ChatView(session);
  document.body.replaceChildren(chat.element);
  const schema = document.getElementById('chat-json-schema') as HTMLTextAreaElement;
  schema.value = '{"type": "object"}';
  schema.dispatchEvent(new Event('change'));
  expect(document.getElementById('chat-json-schema-status')?.textContent).toBe(
    'The CPU engine (llama.cpp wasm) cannot follow a schema: choose WebGPU above to use it.',
  );
  (document.getElementById('chat-input') as HTMLTextAreaElement).value = 'json please';
  await chat.send();
  expect(document.querySelector('[data-testid="chat-error"]')?.textContent).toMatch(
    /^JSON schema: structured output runs on our WebGPU engine \(xgrammar\), not on the CPU engine/,
  );
  expect(document.querySelector('[data-testid="chat-speed"]')?.textContent).toBe('');
  expect(document.querySelectorAll('[data-role="assistant"]')).toHaveLength(0);
  expect(session.task).toBeUndefined();
});

it('the speed line says which answer drafted, the first answer’s too, so a drafted speed is not read as plain', async () => {
  // A stand-in engine: `n` tokens 5 ms apart, with speculative counts when the request drafts.
  const requests: ChatRequest[] = [];
  const fake = {
    async chat(req: ChatRequest, onToken?: (e: TokenEvent) => void): Promise<GenerateResult> {
      requests.push(req);
      const n = 6;
      const t0 = performance.now();
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        await new Promise((r) => setTimeout(r, 5));
        times.push(performance.now());
        onToken?.({ tokenId: 1, text: ' w', tMs: times[i] });
      }
      return {
        promptTokenIds: Array.from({ length: 4 + 10 * (requests.length - 1) }, () => 1),
        outputTokenIds: times.map(() => 1),
        text: ' w'.repeat(n),
        finishReason: 'length',
        tStartMs: t0,
        tokenTimesMs: times,
        ...(req.draft ? { speculative: { drafted: 5, accepted: 4, targetPasses: 2 } } : {}),
      } as GenerateResult;
    },
  };
  const session = new Session({ ours: () => fake as unknown as BenchWorkerEngine });
  session.model = { id: 'stories260K', info: { contextLength: 512 } } as unknown as LoadedModel;
  const chat = new ChatView(session);
  document.body.replaceChildren(chat.element);
  const input = document.getElementById('chat-input') as HTMLTextAreaElement;
  const draft = document.getElementById('chat-draft') as HTMLSelectElement;
  const speed = () => document.querySelector('[data-testid="chat-speed"]')?.textContent ?? '';

  draft.value = 'lookup';
  draft.dispatchEvent(new Event('change'));
  input.value = 'one';
  await chat.send();
  expect(requests[0].draft).toEqual({ type: 'lookup' });
  expect(speed()).toMatch(
    / tokens of context, with drafting: lookup · first token after .* · lookup: 4 of 5/,
  );

  draft.value = '';
  draft.dispatchEvent(new Event('change'));
  input.value = 'two';
  await chat.send();
  expect(requests[1].draft).toBeUndefined();
  expect(speed()).toMatch(
    / tokens of context, without drafting \(first answer: [\d.]+ tok\/s at 10, with drafting: lookup\) · first token after /,
  );
});

it('a message longer than the context is worded for the page: its Context select, not contextLength or --ctx', async () => {
  // A stand-in engine that makes the real engine's check (src/webgpu/generation.ts): 4 characters a token.
  const fake = {
    async chat(req: ChatRequest): Promise<GenerateResult> {
      const chars = req.messages.reduce((n, m) => n + String(m.content).length, 0);
      checkPromptLength(chars, { maxPieceChars: 4 }, 512, 1);
      throw new Error('the check above should have thrown');
    },
  };
  const session = new Session({ ours: () => fake as unknown as BenchWorkerEngine });
  session.model = { id: 'stories260K', info: { contextLength: 512 } } as unknown as LoadedModel;
  const chat = new ChatView(session);
  document.body.replaceChildren(chat.element);
  (document.getElementById('chat-input') as HTMLTextAreaElement).value = 'x'.repeat(4000);
  await chat.send();
  const speed = document.querySelector('[data-testid="chat-speed"]')?.textContent ?? '';
  expect(speed).toBe(
    'The model did not answer (context_overflow): the message needs at least 1001 tokens but the context holds 512 (and one must be left for the answer); shorten the message or choose a larger Context beside the model and load it again',
  );
  expect(speed).not.toMatch(/contextLength|--ctx/);
  // The answer that wrote nothing leaves no empty bubble (the line says why); the question stays.
  expect(document.querySelectorAll('[data-role="assistant"]')).toHaveLength(0);
  expect(document.querySelectorAll('[data-role="user"]')).toHaveLength(1);
});

it('Send names every wrong setting at once (a list under the bar, each marked, the first focused), not one at a time', async () => {
  const requests: ChatRequest[] = [];
  const fake = {
    async chat(req: ChatRequest, onToken?: (e: TokenEvent) => void): Promise<GenerateResult> {
      requests.push(req);
      onToken?.({ tokenId: 1, text: ' w', tMs: performance.now() });
      return {
        promptTokenIds: [1, 1],
        outputTokenIds: [1],
        text: ' w',
        finishReason: 'length',
        tStartMs: performance.now(),
        tokenTimesMs: [performance.now()],
      } as GenerateResult;
    },
  };
  const session = new Session({ ours: () => fake as unknown as BenchWorkerEngine });
  session.model = { id: 'stories260K', info: { contextLength: 512 } } as unknown as LoadedModel;
  const chat = new ChatView(session);
  document.body.replaceChildren(chat.element);
  const el = <T extends HTMLElement = HTMLInputElement>(id: string) => document.getElementById(id) as T;
  const type = (id: string, value: string) => {
    el(id).value = value;
    el(id).dispatchEvent(new Event('input'));
  };
  el<HTMLTextAreaElement>('chat-input').value = 'hello';
  el('chat-max-tokens').value = '';
  el('chat-temperature').value = '3'; // above its max: the browser's own check must not stop Send here
  el<HTMLTextAreaElement>('chat-json-schema').value = '{"type": ';
  // Pressed as a person does; the errors are said before send() first awaits.
  (document.querySelector('.chat__form button[type="submit"]') as HTMLButtonElement).click();
  const error = document.querySelector('[data-testid="chat-error"]') as HTMLElement;
  expect(error.hidden).toBe(false);
  expect(error.textContent).toMatch(/^3 fields to fix:/);
  const lines = () => [...error.querySelectorAll('li')].map((li) => li.textContent);
  expect(lines()).toEqual([
    'Max tokens must be an integer ≥ 1 and ≤ 4096, got nothing',
    'Temperature must be a finite number ≥ 0 and ≤ 2, got "3"',
    expect.stringMatching(/^JSON schema: not JSON \(/),
  ]);
  for (const id of ['chat-max-tokens', 'chat-temperature', 'chat-json-schema'])
    expect(el(id).getAttribute('aria-invalid'), id).toBe('true');
  expect(document.activeElement).toBe(el('chat-max-tokens'));
  // The schema's section was closed: opened, so that its mark shows.
  expect((document.querySelector('.chat__structured') as HTMLDetailsElement).open).toBe(true);
  expect(session.task).toBeUndefined();
  expect(requests).toHaveLength(0);
  expect(document.querySelectorAll('[data-role="user"]')).toHaveLength(0);

  // Fixing a field takes its line and its mark away; the notice goes with the last.
  type('chat-max-tokens', '8');
  expect(el('chat-max-tokens').hasAttribute('aria-invalid')).toBe(false);
  expect(lines()).toHaveLength(2);
  type('chat-temperature', '0');
  expect(lines()).toEqual([expect.stringMatching(/^JSON schema: not JSON/)]);
  expect(error.hidden).toBe(false);
  type('chat-json-schema', '');
  expect(error.hidden).toBe(true);

  // One wrong setting: its message alone; and a send that passes hides the notice.
  el('chat-temperature').value = '';
  await chat.send();
  expect(error.hidden).toBe(false);
  expect(error.textContent).toBe('Temperature must be a finite number ≥ 0 and ≤ 2, got nothing');
  expect(error.querySelector('li')).toBeNull();
  el('chat-temperature').value = '0';
  await chat.send();
  expect(error.hidden).toBe(true);
  expect(el('chat-temperature').hasAttribute('aria-invalid')).toBe(false);
  expect(requests).toHaveLength(1);
  expect(requests[0].maxTokens).toBe(8);

  // An answer's figures on the speed line go with a settings error (the line, its tooltip and KV depth),
  // and New conversation takes a standing notice away with the rest.
  const speed = document.querySelector('[data-testid="chat-speed"]') as HTMLElement;
  expect(speed.dataset.context).toBeDefined();
  el<HTMLTextAreaElement>('chat-input').value = 'again';
  el('chat-max-tokens').value = '';
  await chat.send();
  expect(error.hidden).toBe(false);
  expect(speed.textContent).toBe('');
  expect(speed.hasAttribute('title')).toBe(false);
  expect(speed.dataset.context).toBeUndefined();
  const newConversation = [...document.querySelectorAll('button')].find(
    (b) => b.textContent === 'New conversation',
  );
  expect(newConversation).toBeDefined();
  newConversation?.click();
  expect(error.hidden).toBe(true);
  expect(el('chat-max-tokens').hasAttribute('aria-invalid')).toBe(false);
});

it('a context overflow without the facts (WebLLM) keeps its own message, with no Context select to point to', async () => {
  const fake = {
    async chat(): Promise<GenerateResult> {
      throw new EngineError(
        'context_overflow',
        'WebLLM: Prompt tokens exceed context window size — shorten the prompt',
      );
    },
  };
  const session = new Session({ ours: () => fake as unknown as BenchWorkerEngine });
  session.model = { id: 'stories260K', info: { contextLength: 512 } } as unknown as LoadedModel;
  const chat = new ChatView(session);
  document.body.replaceChildren(chat.element);
  (document.getElementById('chat-input') as HTMLTextAreaElement).value = 'hello';
  await chat.send();
  expect(document.querySelector('[data-testid="chat-speed"]')?.textContent).toBe(
    'The model did not answer (context_overflow): WebLLM: Prompt tokens exceed context window size — shorten the prompt',
  );
});
