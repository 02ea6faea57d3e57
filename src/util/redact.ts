/**
 * Secrets kept out of what a command prints or writes: an API key a server echoes back in an error
 * message (`the server said: bad header Authorization: Bearer sk-…`) must reach neither stderr nor a
 * JUnit file, a CI job summary or a result file. No imports.
 */

/** What a secret is replaced with. */
export const REDACTED = '[redacted]';

/** Escapes `s` for use inside a RegExp. */
const reEscape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `text` with every known secret removed, in the spellings a server may echo it in (as is, JSON-escaped,
 * URL-encoded), and with any credential that looks like one whether it is known or not: `Bearer <token>`
 * (a token of 8 or more characters, RFC 6750's b64token),
 * `Basic <token>` after `Authorization`, and OpenAI-style `sk-…` keys. Secrets shorter than 4 characters
 * are not searched for (they would blank ordinary words); the patterns still apply.
 */
export function redactSecrets(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = text;
  const forms = new Set<string>();
  for (const s of secrets) {
    if (!s || s.length < 4) continue;
    forms.add(s);
    forms.add(JSON.stringify(s).slice(1, -1));
    forms.add(encodeURIComponent(s));
  }
  // Longest first, so that a secret's JSON-escaped spelling is not half-replaced by a shorter form.
  for (const f of [...forms].sort((a, b) => b.length - a.length))
    out = out.replace(new RegExp(reEscape(f), 'g'), REDACTED);
  return out
    .replace(/\b(Bearer)(\s+|%20|\+)[A-Za-z0-9._~+/-]{8,}=*/gi, `$1$2${REDACTED}`)
    .replace(/(Authorization["']?\s*[:=]\s*["']?\s*Basic)(\s+)[A-Za-z0-9+/=._-]+/gi, `$1$2${REDACTED}`)
    .replace(/\bsk-(?:proj-)?[A-Za-z0-9_-]{8,}/g, REDACTED);
}
