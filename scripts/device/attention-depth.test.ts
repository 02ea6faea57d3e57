import { describe, expect, it } from 'vitest';
import { GPU_ATTENTION } from '../../src/webgpu/model/options.ts';
import { attentionMarkdown, candidates, type Row } from './attention-depth.ts';

describe('scripts/device/attention-depth.ts', () => {
  const gpuDefault = { ...GPU_ATTENTION, layout: { kind: 'tiled' as const, lanes: 4 } };

  it('times the default first, then every other layout, chunking, V by pairs and the narrow loads, each once', () => {
    const c = candidates(gpuDefault, 128, 32);
    expect(c[0]).toEqual({ name: 'default: tiled 4 lanes', policy: gpuDefault });
    expect(c.map((x) => x.name)).toEqual([
      'default: tiled 4 lanes',
      'tiled 1 lane',
      'tiled 2 lanes',
      'tiled 8 lanes',
      'strided 8 threads',
      'strided 32 threads',
      'tiled 4 lanes, 128 workgroups, chunks ≥ 128',
      'tiled 4 lanes, 512 workgroups, chunks ≥ 64',
      'tiled 4 lanes, 1024 workgroups, chunks ≥ 64',
      'tiled 4 lanes, 2048 workgroups, chunks ≥ 64',
      'tiled 4 lanes, 1024 workgroups, chunks ≥ 32 of 32, ≤ 256 chunks',
      'tiled 4 lanes, 2048 workgroups, chunks ≥ 16 of 16, ≤ 256 chunks',
      'tiled 4 lanes, V by pairs',
      'tiled 4 lanes, narrow loads',
    ]);
    expect(c.at(-2)?.policy.layout).toEqual({ kind: 'tiled', lanes: 4, narrowV: true });
    expect(c.at(-1)?.policy.layout).toEqual({ kind: 'tiled', lanes: 4, narrow: true });
  });

  it('offers only the lanes the head size and the subgroups take', () => {
    const lanes = (hd: number, sg: number) =>
      candidates({ ...GPU_ATTENTION }, hd, sg)
        .filter((x) => x.policy.layout.kind === 'tiled' && !x.name.includes(','))
        .map((x) => x.policy.layout.lanes);
    expect(lanes(80, 32)).toEqual([1, 2, 4]); // 80 / 4 = 20: not a multiple of 8
    expect(lanes(128, 0)).toEqual([1]); // no subgroups
    expect(lanes(8, 4)).toEqual([1, 2]);
  });

  it('shows the default and the fastest per shape and depth, with errors', () => {
    const row = (candidate: string, us: number, error?: string): Row => ({
      shape: 'S',
      depth: 4096,
      candidate,
      chunk: 128,
      nSplit: 32,
      workgroups: 256,
      usPerToken: us,
      gbps: 500 / us,
      vsDefault: us / 100,
      ...(error ? { error } : {}),
    });
    const md = attentionMarkdown(
      [
        row('default: tiled 4 lanes', 100),
        row('a', 50),
        row('b', 60),
        row('c', 200),
        row('d', Number.NaN, 'compile'),
      ],
      2,
    );
    const lines = md.split('\n').slice(2);
    expect(lines.map((l) => l.split(' | ')[2])).toEqual(['a', 'b', 'default: tiled 4 lanes', 'd']);
    expect(lines[0]).toContain('| 50.0 | 10 | 0.50× |');
    expect(lines[3]).toContain('error: compile');
  });
});
