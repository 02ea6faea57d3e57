import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.ts';
import { UsageError } from './args.ts';
import { checkLocalModel } from './local-model.ts';

const dir = mkdtempSync(join(tmpdir(), 'local-model-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function thrown(f: () => void): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
}

describe('checkLocalModel', () => {
  it('a missing file is a usage error; the README test model adds the npm run setup hint', () => {
    const other = thrown(() => checkLocalModel(join(dir, 'x.gguf'), 'x.gguf'));
    expect(other).toBeInstanceOf(UsageError);
    expect(other.message).toBe('cannot open model file x.gguf: no such file');
    const readme = thrown(() =>
      checkLocalModel(join(dir, 'models', 'stories260K.gguf'), 'models/stories260K.gguf'),
    );
    expect(readme.message).toBe(
      'cannot open model file models/stories260K.gguf: no such file (npm run setup links models/stories260K.gguf to the test model)',
    );
    // Only that file: another model under models/ gets no hint.
    expect(thrown(() => checkLocalModel(join(dir, 'models', 'other.gguf'))).message).not.toContain('setup');
  });

  it('a directory is not a file; a text file is not GGUF (not "an incomplete download")', () => {
    mkdirSync(join(dir, 'd.gguf'));
    expect(thrown(() => checkLocalModel(join(dir, 'd.gguf'), 'd.gguf')).message).toBe(
      'model path d.gguf is not a file',
    );
    writeFileSync(join(dir, 'n.gguf'), 'hi\n');
    const e = thrown(() => checkLocalModel(join(dir, 'n.gguf'), 'n.gguf'));
    expect(e).toBeInstanceOf(EngineError);
    expect(e.message).toBe('n.gguf is not a GGUF file: it starts with "hi." instead of "GGUF"');
  });
});
