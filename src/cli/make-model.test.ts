/**
 * `npm run make-model` end to end: for every architecture in the registry, llama.cpp (node-llama-cpp
 * 3.21.1's CPU build) loads the file it writes and reports the shape that was asked for (n_embd and
 * n_ctx_train from llama.cpp itself, the parameter count llama.cpp sums over the tensors it loaded against
 * the count the shape implies, n_layer and n_vocab from node-llama-cpp's own GGUF reader); the same seed
 * gives the same bytes, another seed other bytes; bad arguments fail with the documented messages (exit 2).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtinChatTemplate } from '../model/chat-template.ts';
import { MAKE_MODEL_ARCHS, type MakeModelShape } from '../model/make-model.ts';
import { useTempDirs } from '../testing/temp-dir.ts';

const tempDir = useTempDirs();
const ROOT = resolve(import.meta.dirname, '../..');

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/make-model.ts', ...args],
      { cwd: ROOT },
      (err, stdout, stderr) => ok({ code: err ? Number(err.code) : 0, stdout, stderr }),
    );
  });
}

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

/**
 * Parameters of a model of shape `s` (head size nEmbd / nHead), counted by hand from llama.cpp's tensor
 * lists (src/models/*.cpp, load_arch_tensors): llama/qwen2/qwen3 (untied: token_embd + output; per layer 2
 * norms, Q/K/V/O, gate/up/down; qwen2's Q/K/V biases, qwen3's per-head Q/K norms), gemma2/gemma3 (tied; 4
 * norms per layer; gemma3's Q/K norms), phi3 (untied; fused attn_qkv, ffn_up of 2·nFF rows, no ffn_gate).
 */
function expectedParams(arch: string, s: MakeModelShape): number {
  const hd = s.nEmbd / s.nHead;
  const q = s.nHead * hd;
  const kv = s.nHeadKv * hd;
  const attn = s.nEmbd * (q + 2 * kv) + q * s.nEmbd;
  const ffn = 3 * s.nEmbd * s.nFF;
  const embd = s.nEmbd * s.nVocab;
  if (arch === 'gemma2' || arch === 'gemma3') {
    const layer = 4 * s.nEmbd + attn + ffn + (arch === 'gemma3' ? 2 * hd : 0);
    return embd + s.nEmbd + s.nLayers * layer;
  }
  let layer = 2 * s.nEmbd + attn + ffn;
  if (arch === 'qwen2') layer += q + 2 * kv;
  if (arch === 'qwen3') layer += 2 * hd;
  return 2 * embd + s.nEmbd + s.nLayers * layer;
}

/** Shapes asked for per architecture (not the defaults, so the flags are seen to work). */
const ASKED: Record<string, MakeModelShape> = {
  llama: { nLayers: 3, nEmbd: 96, nFF: 200, nHead: 6, nHeadKv: 2, nVocab: 300 },
  qwen2: { nLayers: 2, nEmbd: 128, nFF: 256, nHead: 8, nHeadKv: 8, nVocab: 400 },
  qwen3: { nLayers: 4, nEmbd: 64, nFF: 96, nHead: 4, nHeadKv: 1, nVocab: 260 },
  gemma2: { nLayers: 3, nEmbd: 64, nFF: 128, nHead: 4, nHeadKv: 2, nVocab: 280 },
  gemma3: { nLayers: 2, nEmbd: 96, nFF: 160, nHead: 6, nHeadKv: 3, nVocab: 320 },
  phi3: { nLayers: 2, nEmbd: 96, nFF: 192, nHead: 4, nHeadKv: 4, nVocab: 330 },
};

describe('npm run make-model', () => {
  it('every registered architecture has a case here', () => {
    expect(Object.keys(MAKE_MODEL_ARCHS).filter((a) => !ASKED[a])).toEqual([]);
  });

  for (const arch of Object.keys(ASKED).filter((a) => Object.hasOwn(MAKE_MODEL_ARCHS, a))) {
    it(`${arch}: llama.cpp loads the file with the asked shape`, { timeout: 60_000 }, async () => {
      const s = ASKED[arch];
      const out = join(tempDir('make-model-'), `${arch}.gguf`);
      const r = await run([
        '--arch',
        arch,
        '--out',
        out,
        '--seed',
        '7',
        '--layers',
        String(s.nLayers),
        '--embd',
        String(s.nEmbd),
        '--ff',
        String(s.nFF),
        '--heads',
        String(s.nHead),
        '--kv-heads',
        String(s.nHeadKv),
        '--vocab',
        String(s.nVocab),
        '--ctx',
        '384',
        '--type',
        'f16',
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`: ${arch}, F16, seed 7`);
      expect(r.stdout).toContain(`sha256: ${sha(out)}`);
      expect(r.stdout).toContain(`bytes: ${readFileSync(out).length}`);

      const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
      const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
      try {
        const model = await llama.loadModel({ modelPath: out, gpuLayers: 0 });
        expect(model.architecture).toBe(arch);
        expect(model.embeddingVectorSize).toBe(s.nEmbd); // llama_model_n_embd
        expect(model.trainContextSize).toBe(384); // llama_model_n_ctx_train
        // llama_model_n_params: llama.cpp's own sum over the tensors it loaded (and checked against n_vocab).
        const native = (model as unknown as { _model: { getTotalParameters(): number } })._model;
        expect(native.getTotalParameters()).toBe(expectedParams(arch, s));
        const md = model.fileInfo.metadata as unknown as Record<string, Record<string, unknown>>;
        expect(Number(md[arch].block_count)).toBe(s.nLayers);
        expect(model.fileInfo.metadata.tokenizer.ggml.tokens.length).toBe(s.nVocab);
        // gemma2/gemma3/phi3 files carry their chat template (template.ts), llama-family files none.
        expect(model.fileInfo.metadata.tokenizer.chat_template).toBe(builtinChatTemplate(arch));
        // Their turn tokens are single tokens, and the end-of-turn one ends generation, in llama.cpp.
        const turns = arch.startsWith('gemma')
          ? ['<start_of_turn>', '<end_of_turn>']
          : arch === 'phi3'
            ? ['<|system|>', '<|user|>', '<|assistant|>', '<|end|>']
            : [];
        for (const t of turns) {
          const ids = model.tokenize(t, true);
          expect(ids, t).toHaveLength(1);
          expect(model.isEogToken(ids[0]), t).toBe(t === '<end_of_turn>' || t === '<|end|>');
        }
        expect(model.fileInsights.totalLayers).toBe(s.nLayers + 1); // node-llama-cpp counts the output layer
        await model.dispose();
      } finally {
        await llama.dispose();
      }
    });
  }

  it('the docs/cli.md recipe: npm run quantize turns its output into a Q4_K_M file llama.cpp loads', {
    timeout: 60_000,
  }, async () => {
    const dir = tempDir('make-model-');
    const f16 = join(dir, 'g.gguf');
    const q = join(dir, 'g-q4_k_m.gguf');
    const s: MakeModelShape = { nLayers: 4, nEmbd: 256, nFF: 512, nHead: 4, nHeadKv: 1, nVocab: 512 };
    const made = await run([
      '--arch',
      'gemma3',
      '--out',
      f16,
      '--layers',
      '4',
      '--embd',
      '256',
      '--ff',
      '512',
      '--heads',
      '4',
      '--kv-heads',
      '1',
      '--type',
      'F16',
    ]);
    expect(made.code, made.stderr).toBe(0);
    const quant = await new Promise<{ code: number; stderr: string }>((ok) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', 'src/cli/quantize.ts', f16, q, 'Q4_K_M'],
        { cwd: ROOT },
        (err, _out, stderr) => ok({ code: err ? Number(err.code) : 0, stderr }),
      ),
    );
    expect(quant.code, quant.stderr).toBe(0);
    const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    try {
      const model = await llama.loadModel({ modelPath: q, gpuLayers: 0 });
      expect(model.fileInsights.dominantTensorType).toBeDefined();
      const native = (model as unknown as { _model: { getTotalParameters(): number } })._model;
      expect(native.getTotalParameters()).toBe(expectedParams('gemma3', s));
      expect(
        Number((model.fileInfo.metadata as unknown as { general: { file_type: number } }).general.file_type),
      ).toBe(15);
      await model.dispose();
    } finally {
      await llama.dispose();
    }
  });

  it('the same seed gives the same bytes, another seed other bytes', async () => {
    const dir = tempDir('make-model-');
    const [a, b, c] = await Promise.all(
      ['1', '1', '2'].map((seed, i) =>
        run(['--arch', 'llama', '--out', join(dir, `${i}.gguf`), '--seed', seed]),
      ),
    );
    for (const r of [a, b, c]) expect(r.code, r.stderr).toBe(0);
    expect(sha(join(dir, '0.gguf'))).toBe(sha(join(dir, '1.gguf')));
    expect(sha(join(dir, '2.gguf'))).not.toBe(sha(join(dir, '0.gguf')));
    expect(readFileSync(join(dir, '2.gguf')).length).toBe(readFileSync(join(dir, '0.gguf')).length);
  });

  it('bad arguments fail with exit 2 and say why', async () => {
    const dir = tempDir('make-model-');
    const out = join(dir, 'x.gguf');
    const noFolder = join(dir, 'no', 'such');
    const list = Object.keys(MAKE_MODEL_ARCHS).join(', ');
    const cases: [string[], RegExp | string][] = [
      [['--arch', 'mamba', '--out', out], `unknown architecture "mamba"; supported: ${list}`],
      [['--out', out], `--arch is required; supported: ${list}`],
      [['--arch', 'llama'], /--out FILE is required/],
      [['--arch', 'llama', '--out', out, '--heads', '6'], /--heads 6 does not divide --embd 64/],
      [
        ['--arch', 'llama', '--out', out, '--heads', '4', '--kv-heads', '3'],
        /--kv-heads 3 does not divide --heads 4/,
      ],
      [['--arch', 'llama', '--out', out, '--vocab', '100'], /--vocab 100 is below the minimum 259 for llama/],
      [['--arch', 'phi3', '--out', out, '--vocab', '263'], /--vocab 263 is below the minimum 264 for phi3/],
      [['--arch', 'llama', '--out', out, '--layers', '0'], /--layers must be an integer ≥ 1/],
      [['--arch', 'llama', '--out', out, '--embd', '6.5'], /--embd must be an integer/],
      [['--arch', 'llama', '--out', out, '--seed=-1'], /--seed must be an integer/],
      // Before: Node's "Option '--seed <value>' argument is ambiguous".
      [
        ['--arch', 'llama', '--out', out, '--seed', '-1'],
        '--seed must be an integer ≥ 0 and ≤ 4294967295, got "-1"',
      ],
      [
        ['--arch', 'llama', '--out', out, '--heads', '-4'],
        '--heads must be an integer ≥ 1 and ≤ 16777216, got "-4"',
      ],
      // Before: past the range check into an untyped "Map maximum size exceeded".
      [
        ['--arch', 'llama', '--out', out, '--layers', '16777216'],
        '--layers must be an integer ≥ 1 and ≤ 512, got "16777216"',
      ],
      [['--arch', 'llama', '--out', out, '--type', 'Q4_0'], /--type must be F32 or F16, got "Q4_0"/],
      [
        ['--arch', 'llama', '--out', out, '--embd', '36', '--heads', '12'],
        /head size --embd 36 \/ --heads 12 = 3 is odd/,
      ],
      // Before: the model was made, then a raw "error [ENOENT]: ENOENT: no such file or directory, open …".
      [
        ['--arch', 'llama', '--out', join(noFolder, 'x.gguf')],
        `--out ${join(noFolder, 'x.gguf')}: the folder ${noFolder} does not exist (create it first: mkdir -p ${noFolder})`,
      ],
      [['--arch', 'llama', '--out', dir], `--out ${dir} is a folder: give a file name`],
    ];
    const results = await Promise.all(cases.map(([args]) => run(args)));
    results.forEach((r, i) => {
      expect(r.code, `${cases[i][0].join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/^error \[invalid_argument\]: /);
      const want = cases[i][1];
      if (typeof want === 'string') expect(r.stderr).toContain(want);
      else expect(r.stderr).toMatch(want);
    });
    expect(() => readFileSync(out)).toThrow();
    expect(readdirSync(dir)).toEqual([]);
  });
});
