/**
 * The events `<webgpu-chat>` dispatches (widget/element.ts), with their `detail` types: part of the
 * package's typed API (`WebGpuChatEventMap`, checked by events.test-d.ts).
 */
import type { AnswerSummary } from '../chat/conversation.ts';
import type { ModelInfo, ToolCall } from '../core/types.ts';
import type { WidgetEngineKind } from './backends.ts';

/** `detail` of the `ready` event. */
export interface WebGpuChatReadyDetail {
  /** The engine that runs the model (for `engine="auto"`: the one it chose, 'webgpu' or 'wllama'). */
  engine: WidgetEngineKind;
  /** `engine="auto"`: why it chose {@link WebGpuChatReadyDetail.engine} (also `info.backendReason`). */
  reason?: string;
  model: string;
  /**
   * The model's name as the heading shows it: a GGUF's file name without `.gguf` ("stories260K"), else
   * the name the model reports (`info.name` is a GGUF's `general.name`, which may be its architecture).
   */
  name: string;
  info: ModelInfo;
}
/** `detail` of the `token` event. */
export interface WebGpuChatTokenDetail {
  tokenId: number;
  text: string;
  /** The answer so far. */
  answer: string;
  tMs: number;
}
/**
 * `detail` of the `done` event: the answer's text and figures (chat/conversation.ts `AnswerSummary`):
 * finishReason, outputTokens, promptTokens, tokensPerSecond ((tokens − 1) / (last − first token time); null
 * under 2 tokens), contextTokens (promptTokens + outputTokens: the KV depth its decode speed was measured at,
 * which grows over a conversation), ttftMs (null without tokens) and, with `draft-model`, speculative
 * (`{drafted, accepted, targetPasses}`).
 */
export type WebGpuChatDoneDetail = AnswerSummary;
/** `detail` of the `error` event. `code` is an EngineError code, `webgpu_unavailable` or `not_available`. */
export interface WebGpuChatErrorDetail {
  code: string;
  message: string;
  phase: 'load' | 'chat';
}

/**
 * `detail` of the `toolcall` event: the calls the model made in its answer (the `tools` property), in
 * OpenAI's `tool_calls` shape (`{id, type: 'function', function: {name, arguments}}`, arguments a JSON
 * text), and the text written before them. It comes before `done`.
 */
export interface WebGpuChatToolCallDetail {
  toolCalls: ToolCall[];
  text: string;
}

/** Events the element dispatches (they bubble and cross the shadow boundary). */
export interface WebGpuChatEventMap {
  ready: CustomEvent<WebGpuChatReadyDetail>;
  token: CustomEvent<WebGpuChatTokenDetail>;
  done: CustomEvent<WebGpuChatDoneDetail>;
  error: CustomEvent<WebGpuChatErrorDetail>;
  toolcall: CustomEvent<WebGpuChatToolCallDetail>;
}
