import { describe, expect, it } from 'vitest';
import { h } from './h.ts';

describe('h()', () => {
  it('sets attributes, empty ones for true, none for false/null/undefined', () => {
    const b = h('button', {
      class: 'x',
      'data-n': '3',
      disabled: true,
      hidden: false,
      title: undefined,
      id: null,
    });
    expect(b.outerHTML).toBe('<button class="x" data-n="3" disabled=""></button>');
  });

  it('listens with onEVENT handlers and assigns props after the attributes', () => {
    let clicks = 0;
    const b = h('button', { onclick: () => clicks++ }, 'Go');
    b.click();
    b.click();
    expect(clicks).toBe(2);
    expect(b.hasAttribute('onclick')).toBe(false);
    // A text input's value property is its own, apart from the value attribute (its default).
    const text = h('input', { type: 'text', value: 'a', props: { value: 'b' } });
    expect(text.value).toBe('b');
    expect(text.getAttribute('value')).toBe('a');
    const box = h('input', { type: 'checkbox', props: { checked: true } });
    expect(box.checked).toBe(true);
    expect(box.hasAttribute('checked')).toBe(false);
  });

  it('appends children as text, never as markup, and skips null/undefined/false', () => {
    const p = h('p', {}, '<b>bold</b>', null, false, undefined, [h('i', {}, 'x'), 'y']);
    expect(p.innerHTML).toBe('&lt;b&gt;bold&lt;/b&gt;<i>x</i>y');
    expect(p.querySelector('b')).toBeNull();
  });

  it('refuses a function that is no onEVENT handler and a value of another kind', () => {
    expect(() => h('div', { click: () => {} })).toThrow(/must be an onEVENT handler, not "click"/);
    expect(() => h('div', { 'data-n': 3 as unknown as string })).toThrow(/"data-n" must be a string/);
  });
});
