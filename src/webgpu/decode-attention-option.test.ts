/**
 * `WebGpuEngineOptions.attention`'s decode fields (kernel-plan.ts `checkDecodeAttentionOption`,
 * `checkDecodeAttentionModel`): a typed invalid_argument before anything is loaded, naming the field,
 * for every value the kernels would fail to compile or run wrong.
 */
import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.ts';
import type { GpuContext } from './device.ts';
import { checkDecodeAttentionModel, checkKernelOverrides } from './kernel-plan.ts';
import type { AttentionPolicy } from './model/options.ts';

const refused = (f: () => void, text: string) => {
  let err: unknown;
  try {
    f();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(EngineError);
  expect((err as EngineError).code).toBe('invalid_argument');
  expect((err as Error).message).toContain(text);
};

describe('the decode attention option', () => {
  const form = (a: Partial<AttentionPolicy>) => () => checkKernelOverrides({ attention: a });

  it('takes every layout and chunking the kernels run', () => {
    for (const a of [
      { layout: { kind: 'tiled' as const } },
      { layout: { kind: 'tiled' as const, lanes: 8, narrow: true } },
      { layout: { kind: 'tiled' as const, lanes: 4, narrowV: true } },
      { layout: { kind: 'strided' as const, narrowV: false } },
      { layout: { kind: 'strided' as const, threads: 64 } },
      { targetWorkgroups: 1, minChunk: 1, fixedChunk: 4096 },
      { targetWorkgroups: 65536, minChunk: 1048576 },
    ])
      expect(form(a)).not.toThrow();
  });

  it('refuses a chunking of zero, fractions, NaN or absurd sizes', () => {
    refused(
      form({ targetWorkgroups: 0 }),
      'attention.targetWorkgroups must be an integer from 1 to 65536 (got 0)',
    );
    refused(form({ targetWorkgroups: Number.NaN }), 'attention.targetWorkgroups');
    refused(form({ minChunk: 0 }), 'attention.minChunk must be an integer from 1 to 1048576 (got 0)');
    refused(form({ minChunk: 12.5 }), 'attention.minChunk');
    refused(form({ fixedChunk: -64 }), 'attention.fixedChunk');
    refused(form({ targetWorkgroups: '256' as never }), 'attention.targetWorkgroups');
  });

  it('refuses layouts no kernel has', () => {
    refused(form({ layout: { kind: 'rows' } as never }), 'attention.layout must be');
    refused(form({ layout: 'tiled' as never }), 'attention.layout must be');
    refused(
      form({ layout: { kind: 'tiled', lanes: 3 } }),
      'attention.layout.lanes must be 1, 2, 4 or 8 (got 3)',
    );
    refused(
      form({ layout: { kind: 'strided', threads: 12 } }),
      'attention.layout.threads must be a power of two',
    );
    refused(form({ layout: { kind: 'strided', threads: 128 } }), 'attention.layout.threads');
    refused(
      form({ layout: { kind: 'tiled', narrow: 'yes' as never } }),
      'attention.layout.narrow must be a boolean',
    );
    refused(
      form({ layout: { kind: 'tiled', narrowV: 1 as never } }),
      'attention.layout.narrowV must be a boolean (got 1)',
    );
  });

  it('refuses fields the option does not have, so a misspelling does not leave the default running', () => {
    refused(
      form({ targetWorkgroup: 1024 } as never),
      'attention has no field "targetWorkgroup" (it takes layout, targetWorkgroups,',
    );
    refused(
      form({ layout: { kind: 'tiled', threads: 8 } } as never),
      'attention.layout { kind: \'tiled\' } has no field "threads"',
    );
    refused(
      form({ layout: { kind: 'strided', lanes: 4 } } as never),
      'attention.layout { kind: \'strided\' } has no field "lanes"',
    );
  });

  it('refuses lanes the adapter’s subgroups or the head size cannot take', () => {
    const gpu = (hasSubgroups: boolean, subgroupMinSize: number) =>
      ({ hasSubgroups, subgroupMinSize, subgroupMaxSize: 64 }) as unknown as GpuContext;
    const tiled = (lanes: number) => ({ layout: { kind: 'tiled' as const, lanes } });
    expect(() => checkDecodeAttentionModel(tiled(8), gpu(true, 32), 128)).not.toThrow();
    expect(() => checkDecodeAttentionModel(tiled(1), gpu(false, 0), 8)).not.toThrow();
    expect(() => checkDecodeAttentionModel({ layout: { kind: 'strided' } }, gpu(false, 0), 12)).not.toThrow();
    refused(
      () => checkDecodeAttentionModel(tiled(4), gpu(false, 0), 128),
      '4 lanes per position needs subgroups of at least 4 invocations (this adapter: no subgroups)',
    );
    refused(
      () => checkDecodeAttentionModel(tiled(8), gpu(true, 4), 128),
      'subgroups of at least 8 invocations (this adapter: 4–64)',
    );
    refused(
      () => checkDecodeAttentionModel(tiled(8), gpu(true, 32), 80),
      'divide the head size ÷ 4 (80 ÷ 4 = 20)',
    );
  });
});
