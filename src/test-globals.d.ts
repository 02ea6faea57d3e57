/** Absolute path of the test model stories260K.gguf, or '' when missing (vitest.config.ts, browser tests). */
declare const __STORIES260K__: string;
/** Why the test model is missing ('' when found): one line naming where it is looked for. */
declare const __STORIES260K_MISSING__: string;
