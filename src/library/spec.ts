/**
 * Model specs people type: a URL, a Hugging Face shorthand `hf:OWNER/REPO/PATH/FILE.gguf[@REVISION]`, or a
 * Hugging Face page URL (`…/blob/REV/FILE`, which serves HTML) — all resolved to the file's download URL.
 *
 * Hugging Face URL layout (huggingface_hub's `hf_hub_url`): `{endpoint}/{repo}/resolve/{revision}/{path}`,
 * with the path's segments percent-encoded and the revision encoded as one segment. The file-listing API
 * used for sizes and SHA-256s is `{endpoint}/api/models/{repo}/tree/{revision}/{dir}` (its `lfs.oid` is the
 * file's SHA-256).
 */
import { EngineError } from '../core/errors.ts';

/** Default Hugging Face endpoint (huggingface_hub's `HF_ENDPOINT` overrides it there; here `hfEndpoint`). */
export const HF_ENDPOINT = 'https://huggingface.co';

/** A Hugging Face file reference. */
export interface HfFileRef {
  /** `OWNER/REPO`. */
  repo: string;
  /** Path of the file inside the repository, e.g. `Q4_K_M/model-00001-of-00002.gguf`. */
  path: string;
  /** Branch, tag or commit; default `main`. */
  revision: string;
}

/** A resolved model spec. */
export interface ResolvedSpec {
  /** Absolute download URL. */
  url: string;
  /** The spec as the person wrote it (shown in the library). */
  spec: string;
  /** Set for Hugging Face files. */
  hf?: HfFileRef;
}

const HF_SHORTHAND = /^hf:(?:\/\/)?/i;

/** True when `spec` uses the `hf:` shorthand. */
export function isHfShorthand(spec: string): boolean {
  return HF_SHORTHAND.test(spec.trim());
}

function encodePath(path: string): string {
  return path
    .split('/')
    .map((s) => encodeURIComponent(s))
    .join('/');
}

/** The download URL of a Hugging Face file. */
export function hfResolveUrl(ref: HfFileRef, endpoint = HF_ENDPOINT): string {
  return `${endpoint.replace(/\/+$/, '')}/${ref.repo}/resolve/${encodeURIComponent(ref.revision)}/${encodePath(ref.path)}`;
}

/** The tree API URL listing the directory that holds a Hugging Face file. */
export function hfTreeUrl(ref: HfFileRef, endpoint = HF_ENDPOINT): string {
  const dir = ref.path.includes('/') ? ref.path.slice(0, ref.path.lastIndexOf('/')) : '';
  return `${endpoint.replace(/\/+$/, '')}/api/models/${ref.repo}/tree/${encodeURIComponent(ref.revision)}${dir ? `/${encodePath(dir)}` : ''}`;
}

/**
 * Parses `hf:OWNER/REPO/PATH.gguf[@REVISION]`.
 * @throws EngineError('invalid_argument') when it names no repository or no `.gguf` file, with an example.
 */
export function parseHfShorthand(spec: string): HfFileRef {
  const body = spec.trim().replace(HF_SHORTHAND, '');
  const at = body.lastIndexOf('@');
  const revision = at >= 0 ? body.slice(at + 1) : 'main';
  const path = (at >= 0 ? body.slice(0, at) : body).replace(/^\/+|\/+$/g, '');
  const parts = path.split('/').filter(Boolean);
  const example = 'e.g. hf:bartowski/Llama-3.2-1B-Instruct-GGUF/Llama-3.2-1B-Instruct-Q4_K_M.gguf';
  if (parts.length < 2 || !revision) {
    throw new EngineError(
      'invalid_argument',
      `"${spec}" is not a Hugging Face file: write hf:OWNER/REPO/FILE.gguf[@REVISION] (${example})`,
    );
  }
  if (parts.length < 3 || !/\.gguf$/i.test(parts.at(-1) ?? '')) {
    throw new EngineError(
      'invalid_argument',
      `"${spec}" names the repository ${parts.slice(0, 2).join('/')} but no .gguf file in it: ` +
        `add the file's path (${example})`,
    );
  }
  return { repo: `${parts[0]}/${parts[1]}`, path: parts.slice(2).join('/'), revision };
}

/**
 * Resolves what a person typed into a download URL.
 * - `hf:OWNER/REPO/FILE.gguf[@REV]` → `{endpoint}/OWNER/REPO/resolve/REV/FILE.gguf`.
 * - A Hugging Face `…/blob/REV/FILE` page URL → its `…/resolve/REV/FILE` (the page is HTML).
 * - Any other absolute http(s) URL is kept; a relative one (a path ending in .gguf) is resolved against
 *   `base` (the page).
 * @throws EngineError('invalid_argument') for a malformed shorthand, a URL that cannot be parsed, or a
 * relative name with spaces or not ending in .gguf.
 */
export function resolveModelSpec(
  spec: string,
  opts: { hfEndpoint?: string; base?: string } = {},
): ResolvedSpec {
  const trimmed = spec.trim();
  const endpoint = opts.hfEndpoint ?? HF_ENDPOINT;
  if (isHfShorthand(trimmed)) {
    const hf = parseHfShorthand(trimmed);
    return { url: hfResolveUrl(hf, endpoint), spec: trimmed, hf };
  }
  // What a person types that no server has: words (`not a url`), or a relative name that is not a GGUF
  // path, which the page's own server would answer with its HTML page or a 404 under a made-up address.
  const absolute = /^[a-z][a-z\d+.-]*:/i.test(trimmed);
  if (!absolute && (/\s/.test(trimmed) || !/\.gguf$/i.test(trimmed.split(/[?#]/)[0]))) {
    throw new EngineError(
      'invalid_argument',
      `"${spec}" is not a URL or an hf:OWNER/REPO/FILE.gguf shorthand (a GGUF URL looks like ` +
        'https://host/path/model.gguf; a path on this site must end in .gguf)',
    );
  }
  let u: URL;
  try {
    u = new URL(trimmed, opts.base);
  } catch (e) {
    throw new EngineError(
      'invalid_argument',
      `"${spec}" is not a URL or an hf:OWNER/REPO/FILE.gguf shorthand`,
      { cause: e },
    );
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new EngineError('invalid_argument', `"${spec}": only http(s) URLs can be downloaded`);
  }
  const hfHost = new URL(endpoint).host;
  const m = u.host === hfHost ? u.pathname.match(/^\/([^/]+\/[^/]+)\/(blob|resolve)\/([^/]+)\/(.+)$/) : null;
  if (m) {
    const hf: HfFileRef = {
      repo: m[1],
      revision: decodeURIComponent(m[3]),
      path: m[4].split('/').map(decodeURIComponent).join('/'),
    };
    return { url: hfResolveUrl(hf, endpoint), spec: trimmed, hf };
  }
  return { url: u.href, spec: trimmed };
}
