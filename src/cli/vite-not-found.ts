/**
 * A Vite plugin that answers 404 for a file that is not there, where Vite's dev and preview servers would
 * answer 200 with the app's `index.html` (their single-page fallback): a missing `/@fs/ABSOLUTE/PATH` (how
 * the command line's browser runtime serves local models, src/cli/harness-server.ts) or a missing `*.gguf`
 * under the root or `public/` (`npm run dev`) or under the built folder (`npm run preview`, e.g. the widget
 * demo's `models/stories260K.gguf`). Without it a missing model reads as "an HTML page".
 */
import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Connect, Plugin } from 'vite';

const isFile = (p: string) => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

/** Middleware: 404 for a `/@fs/` path or a `.gguf` path that is none of `dirs`' files. */
function notFound(dirs: () => string[]): Connect.NextHandleFunction {
  return (req, res, next) => {
    let path: string;
    try {
      path = decodeURIComponent((req.url ?? '/').split(/[?#]/)[0]);
    } catch {
      return next();
    }
    const candidates = path.startsWith('/@fs/')
      ? [path.slice('/@fs'.length)]
      : /\.gguf$/i.test(path)
        ? dirs().map((d) => join(d, path))
        : undefined;
    if (!candidates || candidates.some(isFile)) return next();
    res.statusCode = 404;
    res.setHeader('content-type', 'text/plain; charset=utf-8');
    res.end(`not found: ${path}`);
  };
}

/** The plugin (dev and preview servers). */
export function missingFilesAre404(): Plugin {
  return {
    name: 'missing-files-are-404',
    apply: 'serve',
    // Registered here (not in a returned hook) so it runs before Vite's own middlewares.
    configureServer(server) {
      const c = server.config;
      server.middlewares.use(notFound(() => [c.root, c.publicDir || c.root]));
    },
    configurePreviewServer(server) {
      const c = server.config;
      server.middlewares.use(notFound(() => [resolve(c.root, c.build.outDir)]));
    },
  };
}
