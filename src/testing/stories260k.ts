/**
 * For test files that need the test model: `STORIES_PATH` is stories260K.gguf's path as `models.ts`
 * resolves it. Importing this module throws `TestModelMissingError` (one line naming the places it is
 * looked for and `npm run setup`) when the model is missing, so such a file fails with that line instead
 * of an ENOENT from deep inside a test.
 */
import { stories260kPath } from './models.ts';

export const STORIES_PATH = stories260kPath();
