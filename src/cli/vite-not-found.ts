/**
 * A Vite plugin that answers 404 for a file that is not there, where Vite's dev server would answer 200
 * with the app's `index.html` (its single-page fallback): a missing `/@fs/ABSOLUTE/PATH` (how the command
 * line's browser runtime serves local models, src/cli/harness-server.ts) or a missing `*.gguf` under the
 * root or `public/` (`npm run dev`). Without it a missing split part reads as "an HTML page".
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Plugin } from 'vite';

const isFile = (p: string) => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

/** The plugin (dev server only). */
export function missingFilesAre404(): Plugin {
  return {
    name: 'missing-files-are-404',
    apply: 'serve',
    configureServer(server) {
      // Registered here (not in a returned hook) so it runs before Vite's own middlewares.
      server.middlewares.use((req, res, next) => {
        let path: string;
        try {
          path = decodeURIComponent((req.url ?? '/').split(/[?#]/)[0]);
        } catch {
          return next();
        }
        const candidates = path.startsWith('/@fs/')
          ? [path.slice('/@fs'.length)]
          : /\.gguf$/i.test(path)
            ? [join(server.config.root, path), join(server.config.publicDir || server.config.root, path)]
            : undefined;
        if (!candidates || candidates.some(isFile)) return next();
        res.statusCode = 404;
        res.setHeader('content-type', 'text/plain; charset=utf-8');
        res.end(`not found: ${path}`);
      });
    },
  };
}
