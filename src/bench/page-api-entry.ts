/**
 * Installs `window.benchApi` as a side effect. `npm run bench` builds this as an extra entry and loads it
 * into the page only when the page's own entry has not installed the API (see src/cli/page-build.ts).
 */
import { installBenchApi } from './page-api.ts';

installBenchApi();
