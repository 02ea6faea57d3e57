/**
 * A local model file checked before a command starts anything slow (Chromium, Dawn, Vite): it exists,
 * is a regular file, and starts as a GGUF file does, so a typo or a wrong file is refused in
 * milliseconds with the same words the engine would use, not after 2–8 s of start-up.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { EngineError } from '../core/errors.ts';
import { loadContextLength } from '../core/validate.ts';
import { checkGgufHead, type OpenedGgufFile, openGguf } from '../gguf/reader.ts';
import { parseSplitName, SPLIT_COUNT_KEY, SPLIT_NO_KEY, splitPartName } from '../gguf/split.ts';
import { llamaConfigFromGguf } from '../model/config.ts';
import { createTokenizer } from '../model/tokenizer/index.ts';
import { checkPromptLength, checkPromptTokens } from '../model/tokenizer/prompt-bound.ts';
import type { Tokenizer } from '../model/tokenizer/types.ts';
import { draftVocabularyProblem } from '../webgpu/speculative.ts';
import { UsageError } from './args.ts';

/**
 * Checks the model file `path` (`shown`: the name in messages, as the person typed it).
 * @throws UsageError "cannot open model file X: no such file" (exit 2) for a missing path (for
 * models/stories260K.gguf, with a hint that `npm run setup` links it), "model path X
 * is not a file" for a directory or a device.
 * @throws EngineError('gguf_invalid' | 'unsupported_model') from gguf/reader.ts `checkGgufHead` for a
 * file that is not GGUF v2/v3 (too short, another magic, big-endian, version 1).
 */
export function checkLocalModel(path: string, shown = path): void {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch {
    // The README's commands name models/stories260K.gguf, which `npm run setup` links: say so.
    const setupHint = /(^|[/\\])models[/\\]stories260K\.gguf$/.test(path)
      ? ' (npm run setup links models/stories260K.gguf to the test model)'
      : '';
    throw new UsageError(`cannot open model file ${shown}: no such file${setupHint}`);
  }
  if (!st.isFile()) throw new UsageError(`model path ${shown} is not a file`);
  const head = new Uint8Array(8);
  const fd = openSync(path, 'r');
  let n: number;
  try {
    n = readSync(fd, head, 0, 8, 0);
  } finally {
    closeSync(fd);
  }
  checkGgufHead(head.subarray(0, n), shown);
}

/**
 * Checks, before a command starts anything slow, that the local draft model `draft` has the local target
 * `target`'s vocabulary (the token texts of both GGUF headers, as the engine checks at load:
 * webgpu/speculative.ts `draftVocabularyProblem`), so a mismatch is refused in milliseconds. Where a header
 * has no token list, the engine's own check at load decides.
 * @throws EngineError('invalid_argument') naming the first difference, in the engine's words; what
 *   gguf/reader.ts `openGguf` throws for a file that is not GGUF.
 */
export async function checkDraftVocabulary(target: string, draft: string): Promise<void> {
  const tokens = async (path: string) =>
    (await openGguf({ path })).metadata['tokenizer.ggml.tokens'] as readonly unknown[] | undefined;
  const t = await tokens(target);
  const d = await tokens(draft);
  if (!t || !d) return;
  const problem = draftVocabularyProblem(t.length, d.length, t, d);
  if (problem) throw new EngineError('invalid_argument', problem);
}

/** Prompts up to this many characters are tokenized to say their exact count ({@link checkPromptFits}). */
const EXACT_COUNT_MAX_CHARS = 1 << 20;

/**
 * Refuses, before the weights load, a prompt that cannot fit the context `generate` will load for the local
 * model `path`: that context by the engine's rule (core/validate.ts `loadContextLength`: `ctx`, else
 * min(the file's trained context, 2048)), the prompt as the file's tokenizer encodes it (with its BOS;
 * past {@link EXACT_COUNT_MAX_CHARS} characters first the bound from its length) —
 * the check the engine makes after loading (webgpu/generation.ts), seconds to minutes sooner. A header the
 * engine could not run (an unsupported architecture, no tokenizer) is left to the load, which says why.
 * @throws EngineError('context_overflow') with the engine's details (contextLength, promptTokens);
 *   what gguf/reader.ts `openGguf` throws for a file that is not GGUF.
 */
export async function checkPromptFits(path: string, prompt: string, ctx: number | undefined): Promise<void> {
  const file = await openGguf({ path });
  let nCtx: number;
  let tok: Tokenizer;
  try {
    nCtx = loadContextLength(llamaConfigFromGguf(file).contextLength, ctx);
    tok = createTokenizer(file.metadata);
  } catch {
    return;
  }
  // The exact count, as the message's "needs N tokens" (a command line's argument is at most 128 KiB on
  // Linux: quick to tokenize); the character bound ("at least N") only for text past that.
  if (prompt.length > EXACT_COUNT_MAX_CHARS) checkPromptLength(prompt.length, tok, nCtx, tok.addBos ? 1 : 0);
  checkPromptTokens(tok.encode(prompt, { addBos: tok.addBos }).length, nCtx);
}

/**
 * Refuses a part of a split model (GGUF metadata `split.count` > 1) as the input of a command that takes a
 * whole model (`command`: "gguf-split", "quantize"): read alone, a part lacks the other parts' tensors, and
 * what was written from it would not load (`gguf_invalid: required tensor … is missing`).
 * @throws EngineError('invalid_argument') "X is part N of M of a split model …", saying what to do instead.
 */
export function refuseSplitPart(
  file: Pick<OpenedGgufFile, 'metadata'>,
  shown: string,
  command: string,
): void {
  const count = Number(file.metadata[SPLIT_COUNT_KEY] ?? 0);
  if (!(count > 1)) return;
  const no = Number(file.metadata[SPLIT_NO_KEY] ?? 0) + 1;
  const first = parseSplitName(shown)?.count === count ? splitPartName(shown, 1, count) : 'its first part';
  throw new EngineError(
    'invalid_argument',
    `${shown} is part ${no} of ${count} of a split model (split.count ${count}): ${command} takes a whole ` +
      `model, and this part alone lacks the other parts' tensors. Merge the parts first (llama.cpp's ` +
      `llama-gguf-split --merge ${first} MERGED.gguf) and give ${command} the merged file`,
  );
}
