/**
 * Stands in for `@mlc-ai/web-xgrammar` in the packaged builds (vite.lib.config.ts, vite.widget.config.ts
 * alias it here): the grammar library is 1.1 MB of inlined wasm, which would go into the inlined engine
 * worker of every page that uses the package or the widget. There, a structured-output request fails with
 * EngineError('unsupported') carrying this message (model/grammar.ts `loadXgrammar`); the repository's
 * page, CLI and tests bundle the real library.
 */
export const XGRAMMAR_ABSENT =
  'this build of the engine leaves out the grammar library (@mlc-ai/web-xgrammar, 1.1 MB) that structured output and constrained tool calls need';
