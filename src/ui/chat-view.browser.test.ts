/**
 * The chat tab's structured output on the CPU engine (wllama cannot constrain): the schema box says so,
 * and a send with a schema is refused before anything reaches the engine, in real Chromium (no model: the
 * session's wllama engine is absent, so a request that got through would fail with `not_loaded` instead).
 */
import { expect, it } from 'vitest';
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
  expect(document.querySelector('[data-testid="chat-speed"]')?.textContent).toMatch(
    /^JSON schema: structured output runs on our WebGPU engine \(xgrammar\), not on the CPU engine/,
  );
  expect(document.querySelectorAll('[data-role="assistant"]')).toHaveLength(0);
  expect(session.task).toBeUndefined();
});
