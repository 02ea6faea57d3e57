/**
 * The benchmark plan in real Chromium, without a model load (a stand-in LoadedModel; the run stops at the
 * plan): every wrong field is named at once, and the Drafting hint shows only with a draft chosen.
 */
import { expect, it } from 'vitest';
import './app.css';
import { BenchView } from './bench-view.ts';
import { type LoadedModel, Session } from './session.ts';

function view(): { bench: BenchView; session: Session } {
  const session = new Session();
  session.model = { id: 'stories260K', info: { contextLength: 512 } } as unknown as LoadedModel;
  const bench = new BenchView(session, document.createElement('section'), document.createElement('section'));
  document.body.replaceChildren(bench.element);
  return { bench, session };
}

const input = (id: string) => document.getElementById(id) as HTMLInputElement;

it('names every empty or invalid plan field at once, marks each and focuses the first', async () => {
  const { bench, session } = view();
  input('plan-max-tokens').value = '';
  input('plan-runs').value = '0';
  input('plan-temperature').value = '';
  // Pressed as a person does: the browser's own validation must not stop the submit at the first field
  // out of its range (Runs 0 is below its min). The errors are said before run() first awaits.
  (document.querySelector('[data-card="plan"] button[type="submit"]') as HTMLButtonElement).click();
  const error = document.querySelector('[data-testid="plan-error"]') as HTMLElement;
  expect(error.hidden).toBe(false);
  expect([...error.querySelectorAll('li')].map((li) => li.textContent)).toEqual([
    'Max tokens must be an integer ≥ 1 and ≤ 4096, got nothing',
    'Runs per prompt must be an integer ≥ 1 and ≤ 100, got "0"',
    'Temperature must be a finite number ≥ 0 and ≤ 2, got nothing',
  ]);
  expect(error.textContent).toMatch(/^3 fields to fix:/);
  for (const id of ['plan-max-tokens', 'plan-runs', 'plan-temperature'])
    expect(input(id).getAttribute('aria-invalid'), id).toBe('true');
  expect(input('plan-warmup').hasAttribute('aria-invalid')).toBe(false);
  expect(document.activeElement).toBe(input('plan-max-tokens'));
  expect(session.task).toBeUndefined();

  // Fixing a field takes its line away; the notice goes when the last is fixed.
  for (const [id, value] of [
    ['plan-max-tokens', '8'],
    ['plan-runs', '1'],
  ]) {
    input(id).value = value;
    input(id).dispatchEvent(new Event('input'));
    expect(input(id).hasAttribute('aria-invalid')).toBe(false);
  }
  expect(error.querySelectorAll('li')).toHaveLength(1);
  expect(error.hidden).toBe(false);
  // The count follows the lines left, and so does the Live card's status (it kept all three).
  expect(error.querySelector('p')?.textContent).toBe('1 field to fix:');
  const status = document.querySelector('[data-testid="run-status"]') as HTMLElement;
  expect(status.textContent).toBe('Temperature must be a finite number ≥ 0 and ≤ 2, got nothing');
  input('plan-temperature').value = '0';
  input('plan-temperature').dispatchEvent(new Event('input'));
  expect(error.hidden).toBe(true);
  expect(status.textContent).toBe('Not started.');

  // One wrong field: its message alone, as before.
  input('plan-warmup').value = '';
  expect(() => bench.plan()).toThrow('Warm-up runs must be an integer ≥ 0 and ≤ 20, got nothing');
});

it('shows the Drafting hint ("timed against the same runs without it") only with a draft chosen', () => {
  view();
  const hint = document.getElementById('plan-draft-hint') as HTMLElement;
  const draft = document.getElementById('plan-draft') as HTMLSelectElement;
  expect(draft.value).toBe('');
  expect(hint.hidden).toBe(true);
  draft.value = 'lookup';
  draft.dispatchEvent(new Event('change'));
  expect(hint.hidden).toBe(false);
  expect(hint.textContent).toBe('timed against the same runs without it');
  draft.value = '';
  draft.dispatchEvent(new Event('change'));
  expect(hint.hidden).toBe(true);
});

it('the draft status says a loaded draft model is unused when None or Prompt lookup is chosen', () => {
  const { session } = view();
  session.setModel({ ...session.model!, draftId: 'tiny' });
  const draft = document.getElementById('plan-draft') as HTMLSelectElement;
  const status = document.getElementById('plan-draft-status') as HTMLElement;
  for (const [value, text] of [
    ['model', 'tiny drafts for stories260K.'],
    ['', 'tiny stays loaded beside stories260K, unused: choose it above to draft with it.'],
    [
      'lookup',
      'tiny stays loaded beside stories260K, unused (prompt lookup drafts): choose it above to draft with it.',
    ],
  ]) {
    draft.value = value;
    draft.dispatchEvent(new Event('change'));
    expect(status.textContent, value).toBe(text);
  }
});

it('with the model on the CPU (wllama) or WebLLM the Drafting select is off at None and says why', () => {
  const { session } = view();
  const draft = document.getElementById('plan-draft') as HTMLSelectElement;
  const status = document.getElementById('plan-draft-status') as HTMLElement;
  draft.value = 'lookup';
  draft.dispatchEvent(new Event('change'));
  for (const [backend, where] of [
    ['wllama', 'on the CPU (llama.cpp wasm)'],
    ['webllm', 'in WebLLM'],
  ] as const) {
    session.backend = backend;
    session.setModel({ ...session.model! });
    expect(draft.disabled, backend).toBe(true);
    expect(draft.value, backend).toBe('');
    expect(status.textContent).toBe(
      `Drafting runs on our WebGPU engine only: stories260K runs ${where}; load it with Engine: WebGPU to draft.`,
    );
  }
  // Back on our engine: the choices again, and the line is gone.
  session.backend = 'webgpu';
  session.setModel({ ...session.model! });
  expect(draft.disabled).toBe(false);
  expect(status.textContent).toBe('');
  draft.value = 'lookup';
  expect(draft.value).toBe('lookup');
});

it('the Prompts choices are short (readable at 390 px) and the chosen set is said in words under the select', () => {
  view();
  const select = document.getElementById('plan-prompts') as HTMLSelectElement;
  const hint = document.getElementById('plan-prompts-hint') as HTMLElement;
  expect([...select.options].map((o) => o.text)).toEqual([
    'Short (3 prompts)',
    'Medium (2 prompts)',
    'Long (1 prompt)',
    'Custom',
  ]);
  expect(select.getAttribute('aria-describedby')).toBe('plan-prompts-hint');
  expect(hint.textContent).toBe('three prompts of a sentence each');
  select.value = 'custom';
  select.dispatchEvent(new Event('change'));
  expect(hint.textContent).toBe('your own prompt, written below');
  expect(
    (document.getElementById('plan-custom') as HTMLElement).closest('.field')?.hasAttribute('hidden'),
  ).toBe(false);
});
