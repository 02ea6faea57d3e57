/**
 * Compile-time checks (run by `tsc --noEmit -p .`; nothing here executes): the widget's events are typed
 * on `WebGpuChatElement` (`addEventListener('done', (e) => e.detail.text)`), through `mount()`,
 * `document.querySelector('webgpu-chat')` and `createElement('webgpu-chat')`; other events keep the DOM's types.
 */
import {
  mount,
  type WebGpuChatDoneDetail,
  type WebGpuChatElement,
  type WebGpuChatErrorDetail,
  type WebGpuChatReadyDetail,
  type WebGpuChatTokenDetail,
} from './index.ts';

export function typedEvents(target: Element): string[] {
  const seen: string[] = [];
  const chat: WebGpuChatElement = mount(target, { model: 'models/stories260K.gguf' });
  chat.addEventListener('ready', (e) => {
    const d: WebGpuChatReadyDetail = e.detail;
    seen.push(d.name);
  });
  chat.addEventListener('token', (e) => {
    const d: WebGpuChatTokenDetail = e.detail;
    seen.push(d.text);
  });
  const onDone = (e: CustomEvent<WebGpuChatDoneDetail>) => {
    const text: string = e.detail.text;
    const tps: number | null = e.detail.tokensPerSecond;
    seen.push(`${text}${tps}`);
  };
  chat.addEventListener('done', onDone, { once: true });
  chat.removeEventListener('done', onDone);
  // `error` is the widget's CustomEvent here, not the DOM's ErrorEvent.
  chat.addEventListener('error', function (e) {
    const d: WebGpuChatErrorDetail = e.detail;
    seen.push(d.code, d.phase, this.tagName);
  });
  // The DOM's own events keep their types; unknown names still take a plain listener.
  chat.addEventListener('click', (e) => seen.push(String(e.clientX)));
  chat.addEventListener('custom-thing', (e: Event) => seen.push(e.type));
  // @ts-expect-error `done`'s detail has no `foo`
  chat.addEventListener('done', (e) => e.detail.foo);

  const found = document.querySelector('webgpu-chat');
  found?.addEventListener('done', (e) => seen.push(e.detail.finishReason));
  document.createElement('webgpu-chat').addEventListener('token', (e) => seen.push(String(e.detail.tokenId)));
  return seen;
}
