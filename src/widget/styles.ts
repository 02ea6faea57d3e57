/**
 * The widget's stylesheet (inside its shadow root). `:host { all: initial }` keeps the page's inherited
 * styles out; custom properties (`--webgpu-chat-*`) and `::part(...)` are the theming hooks.
 */
export const WIDGET_CSS = `
:host {
  all: initial;
  display: block;
  box-sizing: border-box;
  max-width: 100%;
  font-family: var(--webgpu-chat-font, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif);
  font-size: var(--webgpu-chat-font-size, 15px);
  line-height: 1.45;
  --_fg: var(--webgpu-chat-fg, #1c1e21);
  color: var(--_fg);
  --_bg: var(--webgpu-chat-bg, #ffffff);
  --_muted: var(--webgpu-chat-muted, color-mix(in srgb, var(--_fg) 70%, var(--_bg)));
  --_border: var(--webgpu-chat-border, color-mix(in srgb, var(--_fg) 20%, var(--_bg)));
  --_accent: var(--webgpu-chat-accent, #2456d6);
  --_accent-fg: var(--webgpu-chat-accent-fg, #ffffff);
  /* Bubbles and the input default to mixes of the theme's own colours, so that setting only -bg and -fg
     (a dark theme) keeps text readable: fixed light defaults put light text on light bubbles. */
  --_user-bg: var(--webgpu-chat-user-bg, color-mix(in srgb, var(--_accent) 11%, var(--_bg)));
  --_assistant-bg: var(--webgpu-chat-assistant-bg, color-mix(in srgb, var(--_fg) 5%, var(--_bg)));
  --_radius: var(--webgpu-chat-radius, 12px);
  --_focus: var(--webgpu-chat-focus, #1a73e8);
}
:host([hidden]) { display: none; }
*, *::before, *::after { box-sizing: border-box; }
.root {
  display: flex;
  flex-direction: column;
  gap: 8px;
  height: var(--webgpu-chat-height, 480px);
  min-height: 260px;
  padding: 12px;
  background: var(--_bg);
  border: 1px solid var(--_border);
  border-radius: var(--_radius);
}
.header { display: flex; align-items: baseline; justify-content: space-between; gap: 8px; flex-wrap: wrap; }
.title { margin: 0; font-size: 1em; font-weight: 600; overflow-wrap: anywhere; }
.status { margin: 0; font-size: 0.85em; color: var(--_muted); }
.progress { display: flex; flex-direction: column; gap: 4px; font-size: 0.85em; color: var(--_muted); }
.progress[hidden], .notice[hidden] { display: none; }
progress { width: 100%; height: 8px; accent-color: var(--_accent); }
.notice {
  margin: 0;
  padding: 10px 12px;
  border-radius: calc(var(--_radius) * 0.6);
  background: var(--webgpu-chat-notice-bg, #fff4e5);
  color: var(--webgpu-chat-notice-fg, #6b3d00);
  overflow-wrap: anywhere;
}
.log {
  flex: 1 1 auto;
  min-height: 0;
  overflow-y: auto;
  display: flex;
  flex-direction: column;
  gap: 8px;
  padding: 4px 2px;
}
.log:empty::before { content: attr(data-empty); color: var(--_muted); font-size: 0.9em; margin: auto; text-align: center; }
:host([data-state="error"]) .log:empty::before { content: none; }
.msg {
  max-width: 88%;
  padding: 8px 12px;
  border-radius: var(--_radius);
  white-space: pre-wrap;
  overflow-wrap: anywhere;
}
.msg--user { align-self: flex-end; background: var(--_user-bg); }
.msg--assistant { align-self: flex-start; background: var(--_assistant-bg); }
.msg--assistant[aria-busy="true"] .msg__body::after { content: "▍"; opacity: 0.6; }
.msg__who { margin: 0 0 2px; font-size: 0.75em; font-weight: 600; color: var(--_muted); }
.msg__body { margin: 0; }
.msg__note { margin: 4px 0 0; font-size: 0.8em; color: var(--_muted); }
.stats { flex: 0 0 auto; margin: 0; min-height: 1.2em; font-size: 0.8em; color: var(--_muted); font-variant-numeric: tabular-nums; }
.form { display: flex; flex-direction: column; gap: 8px; }
.visually-hidden {
  position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;
  clip: rect(0 0 0 0); white-space: nowrap; border: 0;
}
textarea {
  width: 100%;
  min-height: 2.8em;
  max-height: 10em;
  resize: vertical;
  padding: 8px 10px;
  font: inherit;
  color: inherit;
  background: var(--webgpu-chat-input-bg, var(--_bg));
  border: 1px solid var(--_border);
  border-radius: calc(var(--_radius) * 0.6);
}
.buttons { display: flex; gap: 8px; flex-wrap: wrap; }
button {
  min-height: 40px;
  min-width: 44px;
  padding: 8px 16px;
  font: inherit;
  font-weight: 600;
  color: var(--_accent);
  background: transparent;
  border: 1px solid var(--_accent);
  border-radius: calc(var(--_radius) * 0.6);
  cursor: pointer;
}
button.primary { color: var(--_accent-fg); background: var(--_accent); }
button:disabled { opacity: 0.45; cursor: not-allowed; }
button:focus-visible, textarea:focus-visible, .log:focus-visible {
  outline: 3px solid var(--_focus);
  outline-offset: 2px;
}
@media (max-width: 480px) {
  .root { padding: 8px; height: var(--webgpu-chat-height, 70vh); }
  .msg { max-width: 96%; }
  .buttons button { flex: 1 1 0; padding: 8px; }
}
@media (prefers-reduced-motion: reduce) { .msg--assistant[aria-busy="true"] .msg__body::after { content: ""; } }
`;
