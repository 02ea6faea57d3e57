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
    // A question whose answer failed: marked, with a note, and its text kept.
    const q = t.user('lost');
    q.unanswered();
    expect(q.el.dataset.unanswered).toBe('true');
    expect(q.el.querySelector('.msg__body')?.textContent).toBe('lost');
    expect(q.el.querySelector('[part="message-note"]')?.textContent).toBe(
      'Not answered: left out of the conversation.',
    );
    expect(turns[0].dataset.unanswered).toBeUndefined();
    expect(turns[1].getAttribute('part')).toBe('message assistant-message');
    expect(turns[1].querySelector('[part="message-text"]')).toBe(turns[1].querySelector('.msg__body'));
    t.clear();
    expect(t.empty).toBe(true);
  });

  it('keeps the end in view: after the note under an answer, after a resize; not once the reader scrolled up', async () => {
    const log = document.createElement('div');
    log.style.cssText = 'height: 120px; overflow-y: auto; width: 200px; line-height: 20px;';
    document.body.append(log);
    const scrolled = () => new Promise((ok) => requestAnimationFrame(() => setTimeout(ok, 0)));
    const gap = () => log.scrollHeight - log.scrollTop - log.clientHeight;
    try {
      const t = new ChatTranscript(log, () => 'A');
      for (let i = 0; i < 4; i++) t.user(`question ${i}\nsecond line`);
      const a = t.assistant();
      a.append('one\ntwo\nthree');
      expect(gap()).toBeLessThanOrEqual(1);
      a.finish('length');
      // The note came after the last scroll: it must be in view too.
      expect(gap()).toBeLessThanOrEqual(1);
      log.style.height = '60px';
      t.keepEnd();
      expect(gap()).toBeLessThanOrEqual(1);
      // The reader scrolls up: a resize or a finished answer leaves the view where the reader put it.
      log.scrollTop = 0;
      await scrolled();
      expect(t.atEnd).toBe(false);
      log.style.height = '100px';
      t.keepEnd();
      const b = t.assistant();
      log.scrollTop = 0;
      await scrolled();
      b.finish('length', 'text');
      expect(log.scrollTop).toBe(0);
      // Back at the end: followed again.
      log.scrollTop = log.scrollHeight;
      await scrolled();
      expect(t.atEnd).toBe(true);
      log.style.height = '50px';
      t.keepEnd();
      expect(gap()).toBeLessThanOrEqual(1);
    } finally {
      log.remove();
    }
  });
});
