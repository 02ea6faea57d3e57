/**
 * Stands in for `@mlc-ai/web-xgrammar` in the packaged builds (vite.lib.config.ts, vite.widget.config.ts
 * alias it here): the grammar library is 1.1 MB of inlined wasm, which would go into the inlined engine
 * worker of every page that uses the package or the widget. There, a structured-output request fails with
 * EngineError('unsupported') carrying this message (model/grammar.ts `loadXgrammar`); the repository's
 * page, CLI and tests bundle the real library.
 */
export const XGRAMMAR_ABSENT =
  'structured output is not available in this build: the npm package and the <webgpu-chat> widget leave out ' +
  'the grammar library (@mlc-ai/web-xgrammar, 1.1 MB of wasm) that response_format (json_object, ' +
  "json_schema, grammar) and constrained tool calls (tool_choice 'required' or a named function, strict " +
  "tools) need. Send the request without them (tools with tool_choice 'auto' and no strict work: parse and " +
  "check the output yourself), or use this repository's page or command line, which include the library";
