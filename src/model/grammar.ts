/**
 * Structured output's grammar side, without a GPU: a {@link ResponseFormat} (JSON object, JSON schema,
 * EBNF/GBNF grammar) compiled against a model's vocabulary into a token matcher that says, at each step,
 * which tokens may come next (a bitmask, bit i of word i >> 5 = token i allowed) and follows the tokens
 * generated. The engine applies the mask to the logits (webgpu/kernels/mask.ts) and stops when the grammar
 * is complete.
 *
 * The library is xgrammar (`@mlc-ai/web-xgrammar`, its WebAssembly build, as WebLLM uses; Apache-2.0): the
 * field's grammar-to-token-mask engine (also vLLM's and SGLang's default), with a JSON Schema converter,
 * an EBNF parser that reads llama.cpp's GBNF, and adaptive token-mask caches (a mask costs microseconds
 * for most steps). It is loaded only when a constrained request comes (its module embeds ~1 MB of wasm).
 *
 * The vocabulary handed to it is each token's exact output bytes (`Tokenizer.tokenBytes`, what the
 * engine streams) written in GPT-2's byte-to-character map with vocab type `byte_level`, whatever the
 * model's own tokenizer is (SentencePiece or BPE): so the grammar sees the very bytes the answer is made
 * of. Control and unknown tokens give no bytes: xgrammar then never allows them, except the stop
 * tokens (every end-of-generation id), which it allows where the grammar may end. One caveat: a
 * SentencePiece model's answer drops the first token's leading space (llama.cpp's rule, tokenizer
 * `AnswerText`), while the grammar saw it; JSON allows that space, a grammar that requires a leading
 * space sees its output without it.
 *
 * Known limitations of xgrammar 0.1.27: a `number` with `minimum`/`maximum` may get fractional digits past
 * an integer bound (3.1 under maximum 3, −5.1 over minimum −5); with a byte-level vocabulary, bytes that
 * are not valid UTF-8 can pass inside a JSON string (the decoder shows each as U+FFFD, which then counts
 * against a `maxLength`; seen with random-weight models, whose picks are noise). `integer` ranges,
 * lengths, enums, patterns, item counts and required properties are otherwise exact (grammar.test.ts
 * checks them with ajv). Its bounded-length strings' raw control characters are patched out
 * ({@link schemaGrammar}).
 */
import { EngineError, isEngineError } from '../core/errors.ts';
import type { ResponseFormat } from '../core/types.ts';
import type { Tokenizer } from './tokenizer/types.ts';

type Xgrammar = typeof import('@mlc-ai/web-xgrammar');
type XCompiledGrammar = import('@mlc-ai/web-xgrammar').CompiledGrammar;
type XGrammarMatcher = import('@mlc-ai/web-xgrammar').GrammarMatcher;
type XGrammarCompiler = import('@mlc-ai/web-xgrammar').GrammarCompiler;

let loading: Promise<Xgrammar> | undefined;

/**
 * The xgrammar module, imported once. Its bundle is a UMD script inside an ES module package: a browser
 * (or Vite) evaluates it fine; Node's ES loader gives its exports only through `globalThis.xgrammar` and
 * needs `require`/`__filename` as globals when its wasm starts (the wasm is inlined, so nothing is read
 * through them): in Node they are set, where absent, and left set.
 * @throws EngineError('unsupported') where it fails to load, or where the build leaves it out (the npm
 *   package and the widget: src/model/xgrammar-absent.ts, whose message says what to do instead).
 */
export function loadXgrammar(): Promise<Xgrammar> {
  loading ??= (async () => {
    const g = globalThis as Record<string, unknown>;
    const isNode =
      typeof process === 'object' &&
      typeof process.versions?.node === 'string' &&
      typeof document === 'undefined';
    if (isNode) {
      const { createRequire } = await import(/* @vite-ignore */ 'node:module');
      g.require ??= createRequire(import.meta.url);
      g.__filename ??= '/xgrammar.js';
    }
    try {
      const mod = (await import('@mlc-ai/web-xgrammar')) as Partial<Xgrammar> & {
        default?: Xgrammar;
        XGRAMMAR_ABSENT?: string;
      };
      // The packaged builds' stand-in: its message is the whole story (no "failed to load" around it).
      if (mod.XGRAMMAR_ABSENT) throw new EngineError('unsupported', mod.XGRAMMAR_ABSENT);
      const x = mod.GrammarMatcher
        ? (mod as Xgrammar)
        : (mod.default ?? (g.xgrammar as Xgrammar | undefined));
      if (!x?.GrammarMatcher) throw new Error('the module has no GrammarMatcher');
      return x;
    } catch (e) {
      loading = undefined;
      if (isEngineError(e)) throw e;
      throw new EngineError(
        'unsupported',
        `the grammar library (@mlc-ai/web-xgrammar) failed to load: ${e}`,
        {
          cause: e,
        },
      );
    }
  })();
  return loading;
}

/**
 * The dispatcher xgrammar's wasm prints through: its module binds `console.error` once, when it starts,
 * so that is done with this in place (see {@link GrammarCompiler}), and {@link withLibraryMessage} reads
 * the lines while a compile runs; otherwise they go to the console as before.
 */
let captured: string[] | undefined;
function libraryPrint(this: unknown, ...args: unknown[]): void {
  if (captured) captured.push(args.map(String).join(' '));
  else consoleError(...args);
}
const consoleError = console.error.bind(console);

/** GPT-2's byte → character map (`bytes_to_unicode`), the spelling of xgrammar's `byte_level` vocab. */
const BYTE_CHAR: string[] = (() => {
  const out: string[] = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    out[b] = String.fromCodePoint(printable ? b : 256 + n++);
  }
  return out;
})();

/** A token's output bytes spelled in GPT-2's byte-level characters ('' for no bytes). */
export function byteLevelText(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += BYTE_CHAR[b];
  return s;
}

/**
 * xgrammar writes a failed check to stderr (`[FATAL] file:line: message`) and then aborts the call
 * with a bare "Aborted()"; this runs `f` capturing those lines so the error can name the problem.
 */
async function withLibraryMessage<T>(what: string, f: () => Promise<T>): Promise<T> {
  const lines: string[] = [];
  captured = lines;
  try {
    return await f();
  } catch (e) {
    const fatal = lines
      .map((l) => /\[FATAL\][^:]*:\d+:\s*(.*)$/s.exec(l)?.[1] ?? '')
      .filter((l) => l !== '')
      .join('; ');
    throw new EngineError('invalid_argument', `${what}: ${fatal || String(e)}`, { cause: e });
  } finally {
    captured = undefined;
  }
}

/** A compiled grammar: make a {@link TokenMatcher} per generation. */
export interface CompiledTokenGrammar {
  /** A fresh matcher at the grammar's start. */
  matcher(): Promise<TokenMatcher>;
  /** Milliseconds the compile took (0 when it came from the cache). */
  compileMs: number;
}

/** The state of one constrained generation. */
export interface TokenMatcher {
  /** The tokens allowed next: [ceil(nVocab / 32)] words, bit i of word i >> 5 = token i allowed. */
  nextMask(): Promise<Int32Array>;
  /** Follows token `id`; false when the grammar does not allow it (the state is then unchanged). */
  accept(id: number): boolean;
  /** True once a stop token was accepted where the grammar may end. */
  isTerminated(): boolean;
  /**
   * Undoes the last `n` accepted tokens (a stop token included), as speculative decoding does for the
   * drafts it tried (xgrammar's `rollBack`). n ≤ the tokens accepted so far.
   */
  rollBack(n: number): void;
  /** Frees the matcher's wasm memory. */
  dispose(): void;
}

/**
 * Compiles {@link ResponseFormat}s against one tokenizer's vocabulary; keeps the vocabulary's
 * preprocessing (TokenizerInfo, ~30 ms for 512 tokens, seconds for 128k) and the last few compiled
 * formats.
 */
export class GrammarCompiler {
  private compiler?: Promise<XGrammarCompiler>;
  private readonly cache = new Map<string, Promise<XCompiledGrammar>>();

  /** @param tok the model's tokenizer; @param nVocab the logits' width (≥ the tokenizer's vocabulary). */
  constructor(
    private readonly tok: Tokenizer,
    private readonly nVocab = tok.nVocab,
  ) {}

  private getCompiler(): Promise<XGrammarCompiler> {
    this.compiler ??= (async () => {
      const x = await loadXgrammar();
      const vocab: string[] = [];
      const stops: number[] = [];
      for (let id = 0; id < this.tok.nVocab; id++) {
        vocab.push(byteLevelText(this.tok.tokenBytes(id)));
        if (this.tok.isEog(id)) stops.push(id);
      }
      // The first call starts the wasm, which binds console.error: let it bind libraryPrint.
      const orig = console.error;
      console.error = libraryPrint;
      let info: Awaited<ReturnType<Xgrammar['TokenizerInfo']['createTokenizerInfo']>>;
      try {
        info = await x.TokenizerInfo.createTokenizerInfo(vocab, 'byte_level', false, this.nVocab, stops);
      } finally {
        console.error = orig;
      }
      return x.GrammarCompiler.createGrammarCompiler(info);
    })();
    this.compiler.catch(() => {
      this.compiler = undefined;
    });
    return this.compiler;
  }

  /**
   * Compiles `format` (not 'text') into a grammar over this vocabulary.
   * @throws EngineError('invalid_argument') naming the problem for a schema or grammar the library cannot
   *   compile; 'unsupported' when the library cannot load.
   */
  async compile(format: Exclude<ResponseFormat, { type: 'text' }>): Promise<CompiledTokenGrammar> {
    const key = JSON.stringify(format);
    const t0 = performance.now();
    let cached = this.cache.get(key);
    const hit = cached !== undefined;
    if (!cached) {
      const compiler = await this.getCompiler();
      cached = this.compileWith(compiler, format);
      this.cache.set(key, cached);
      cached.catch(() => this.cache.delete(key));
      while (this.cache.size > 8) this.cache.delete(this.cache.keys().next().value as string);
    }
    const compiled = await cached;
    const compileMs = hit ? 0 : performance.now() - t0;
    const x = await loadXgrammar();
    return {
      compileMs,
      matcher: async () => wrapMatcher(await x.GrammarMatcher.createGrammarMatcher(compiled)),
    };
  }

  private compileWith(
    c: XGrammarCompiler,
    f: Exclude<ResponseFormat, { type: 'text' }>,
  ): Promise<XCompiledGrammar> {
    switch (f.type) {
      case 'json_object':
        // Any JSON object (OpenAI's JSON mode), not any JSON value.
        return withLibraryMessage('responseFormat json_object', async () =>
          c.compileGrammar(await schemaGrammar('{"type":"object"}', false), 'root'),
        );
      case 'json_schema': {
        const text = typeof f.schema === 'string' ? f.schema : JSON.stringify(f.schema);
        // strict (OpenAI's Structured Outputs): no properties beyond the schema's; otherwise as the schema says.
        return withLibraryMessage('responseFormat.schema cannot be compiled', async () =>
          c.compileGrammar(await schemaGrammar(text, f.strict !== false), 'root'),
        );
      }
      case 'grammar':
        return withLibraryMessage('responseFormat.grammar cannot be compiled', () =>
          c.compileGrammar(f.grammar, 'root'),
        );
      case 'structural_tag':
        return withLibraryMessage('responseFormat structural tag cannot be compiled', async () =>
          c.compileStructuralTag({ type: 'structural_tag', format: await compactJson(f.format) }),
        );
    }
  }
}

/**
 * The EBNF grammar (root rule `root`) of JSON valid against `schema` (JSON text), compact (one line, `,`
 * and `:` without spaces, no free whitespace: a small model could otherwise spend every token on
 * whitespace), `strict`: no properties or items beyond the schema's. Made by xgrammar's converter, with
 * one fix: xgrammar 0.1.27 writes the characters of a string with `maxLength`/`minLength` as
 * `[^"\\\r\n]`, which lets raw control characters (U+0000–U+001F) into a JSON string, where
 * JSON.parse refuses them; they are excluded here, as its unbounded strings do.
 */
export async function schemaGrammar(schema: string, strict: boolean): Promise<string> {
  const x = await loadXgrammar();
  const g = await x.Grammar.fromJSONSchema(schema, false, -1, [',', ':'], strict);
  try {
    return g.toString().replaceAll('[^\\"\\\\\\r\\n]', '[^\\0-\\x1f\\"\\\\]');
  } finally {
    g.dispose();
  }
}

/**
 * A structural tag with each `json_schema` part replaced by its grammar in compact JSON (one line, no
 * free whitespace), as the JSON response formats are: xgrammar's structural tags allow any whitespace in
 * JSON, where a small model can spend every token.
 */
async function compactJson(format: unknown): Promise<unknown> {
  if (Array.isArray(format)) return Promise.all(format.map(compactJson));
  if (typeof format !== 'object' || format === null) return format;
  const o = format as Record<string, unknown>;
  if (o.type === 'json_schema' && 'json_schema' in o) {
    const schema = typeof o.json_schema === 'string' ? o.json_schema : JSON.stringify(o.json_schema);
    return { type: 'grammar', grammar: await schemaGrammar(schema, true) };
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) out[k] = await compactJson(v);
  return out;
}

function wrapMatcher(m: XGrammarMatcher): TokenMatcher {
  return {
    nextMask: () => m.getNextTokenBitmask(),
    accept: (id) => m.acceptToken(id),
    isTerminated: () => m.isTerminated(),
    rollBack: (n) => {
      if (n > 0) m.rollBack(n);
    },
    dispose: () => m.dispose(),
  };
}
