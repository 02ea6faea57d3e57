/**
 * stories260K.gguf's URL for browser tests: vitest.config.ts resolves the model with `models.ts` (Node)
 * and serves its folder; the page gets the path as `__STORIES260K__` (empty when missing, with the reason
 * in `__STORIES260K_MISSING__`).
 */

/** `/@fs/…/stories260K.gguf` (relative to the test page); throws the one-line reason when the model is missing. */
export function stories260kUrl(): string {
  if (!__STORIES260K__) throw new Error(__STORIES260K_MISSING__);
  return `/@fs${__STORIES260K__}`;
}
