/** Absolute path of `../shared` beside the repository, defined for browser tests (vitest.config.ts). */
declare const __SHARED_DIR__: string;
