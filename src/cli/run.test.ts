import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('onInterruptSignals', () => {
  it('exits 143 on SIGTERM even when the handler throws (no uncaught exit 1), saying what failed', () => {
    const script = `
      import { onInterruptSignals } from './src/cli/run.ts';
      onInterruptSignals(() => { throw new Error('disk full'); });
      setTimeout(() => {}, 10000);
      process.kill(process.pid, 'SIGTERM');`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(143);
    expect(r.stderr).toContain('could not write what was measured: disk full');
  });
});
