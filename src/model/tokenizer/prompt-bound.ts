/**
 * A cheap, exact early refusal of a prompt too long for the context, before tokenizing it (issue 47 item
 * 9: a 134M-character prompt crashed the tokenizer; 50M characters took minutes to be refused). A token
 * covers at most `tok.maxPieceChars` UTF-16 code units of the text, so a text of C code units is at least
 * ceil(C / maxPieceChars) tokens: when that (plus a BOS) leaves no room to generate, nothing can fit.
 */

import { EngineError } from '../../core/errors.ts';
import type { Tokenizer } from './types.ts';

/** The fewest tokens `text` (of `chars` UTF-16 code units) can encode to with `tok`, plus `extraTokens`. */
export function minPromptTokens(
  chars: number,
  tok: Pick<Tokenizer, 'maxPieceChars'>,
  extraTokens = 0,
): number {
  return Math.ceil(chars / tok.maxPieceChars) + extraTokens;
}

/**
 * The most tokens `text` can encode to (plus `extraTokens`, e.g. 1 for a BOS): one per UTF-8 byte (byte
 * fallback or byte-level BPE at worst; no piece is shorter than a byte), plus a space prefix and one to spare.
 * Every UTF-16 surrogate counts 3 bytes (a pair is 4 in UTF-8; a lone one becomes U+FFFD, 3), so it never
 * undercounts. The bound under which a prompt need not be tokenized before a request to know it fits.
 */
export function maxPromptTokens(text: string, extraTokens = 0): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
  }
  return bytes + 2 + extraTokens;
}

/**
 * Throws when a prompt of `chars` UTF-16 code units cannot fit a context of `nCtx` tokens with one left to
 * generate (the check runGeneration makes on the tokens), whatever it tokenizes to.
 * @param extraTokens tokens encode adds besides the text's (1 for a BOS).
 * @throws EngineError('context_overflow').
 */
export function checkPromptLength(
  chars: number,
  tok: Pick<Tokenizer, 'maxPieceChars'>,
  nCtx: number,
  extraTokens = 0,
): void {
  const min = minPromptTokens(chars, tok, extraTokens);
  if (min >= nCtx) {
    throw new EngineError(
      'context_overflow',
      `the prompt has ${chars} characters, so at least ${min} tokens (a token covers at most ${tok.maxPieceChars} characters), but the context holds ${nCtx} (and at least one must be left to generate); shorten the prompt or load with a larger context (contextLength; --ctx on the command line)`,
      { details: { contextLength: nCtx, promptTokens: min, promptTokensAtLeast: true } },
    );
  }
}

/**
 * Throws when a prompt of `n` tokens leaves none of a context of `nCtx` tokens to generate (the check
 * every engine makes on the tokens before prefill). `advice`: where the context is set, in the caller's
 * terms.
 * @throws EngineError('context_overflow') with details `contextLength` and `promptTokens`.
 */
export function checkPromptTokens(
  n: number,
  nCtx: number,
  advice = 'contextLength; --ctx on the command line',
): void {
  if (n >= nCtx)
    throw new EngineError(
      'context_overflow',
      `the prompt has ${n} tokens but the context holds ${nCtx} (and at least one must be left to generate); shorten the prompt or load with a larger context (${advice})`,
      { details: { contextLength: nCtx, promptTokens: n } },
    );
}
