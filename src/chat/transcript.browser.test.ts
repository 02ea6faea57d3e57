import { describe, expect, it } from 'vitest';
import { ChatTranscript } from './transcript.ts';

describe('ChatTranscript', () => {
  it('writes turns as text with their role, speaker, parts, and how each answer ended', () => {
    const log = document.createElement('div');
    let name = 'stories260K';
    const t = new ChatTranscript(log, () => name);
    expect(t.empty).toBe(true);
    const markup = '<img src=x onerror="alert(1)"> & <b>bold</b>';
    t.user(markup);
    const a = t.assistant();
    expect(a.el.getAttribute('aria-busy')).toBe('true');
    a.append('<i>');
    a.append('');
    a.append('ok</i>');
    expect(a.body.textContent).toBe('<i>ok</i>');
    a.finish('length');
    name = 'other';
    const b = t.assistant();
    b.finish('aborted', 'final <u>text</u>');
    const c = t.assistant();
    c.finish('stop');
    const d = t.assistant();
    d.finish('error');

    expect(log.querySelectorAll('img, b, i, u')).toHaveLength(0);
    const turns = [...log.children] as HTMLElement[];
    expect(turns.map((e) => [e.dataset.role, e.dataset.finish ?? null, e.hasAttribute('aria-busy')])).toEqual(
      [
        ['user', null, false],
        ['assistant', 'length', false],
        ['assistant', 'aborted', false],
        ['assistant', 'stop', false],
        ['assistant', 'error', false],
      ],
    );
    expect(turns.map((e) => e.querySelector('.msg__who')?.textContent)).toEqual([
      'You',
      'stories260K',
      'other',
      'other',
      'other',
    ]);
    expect(turns[0].querySelector('.msg__body')?.textContent).toBe(markup);
    expect(turns[2].querySelector('.msg__body')?.textContent).toBe('final <u>text</u>');
    expect(turns.map((e) => e.querySelector('.msg__note')?.textContent ?? null)).toEqual([
      null,
      'Cut at max tokens.',
      'Stopped.',
      null,
      null,
    ]);
    expect(turns[0].getAttribute('part')).toBe('message user-message');
    expect(turns[1].getAttribute('part')).toBe('message assistant-message');
    expect(turns[1].querySelector('[part="message-text"]')).toBe(turns[1].querySelector('.msg__body'));
    t.clear();
    expect(t.empty).toBe(true);
  });
});
