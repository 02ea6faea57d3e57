/**
 * Load progress on stderr, the same lines in every command: each phase's state (download, upload,
 * compile…), at most one line per 500 ms plus one when a phase completes, so a long load is never silent.
 */
import type { LoadProgress } from '../core/types.ts';
import { fmtBytes, fmtSig } from '../util/format.ts';

/**
 * A `LoadProgress` handler that writes lines through `log` (e.g. `bench: …` on stderr).
 * Each line lists every phase seen so far: `compile D/N pipelines`, or `PHASE done / total` in bytes.
 */
export function loadProgressLogger(log: (line: string) => void): (p: LoadProgress) => void {
  const phases = new Map<string, LoadProgress>();
  let lastAt = 0;
  let lastLine = '';
  const line = () =>
    [...phases.values()]
      .map((p) =>
        p.phase === 'compile'
          ? `compile ${p.bytesDone}/${p.bytesTotal} pipelines`
          : `${p.phase} ${p.bytesTotal > 0 ? `${fmtBytes(p.bytesDone)} / ${fmtBytes(p.bytesTotal)}` : fmtBytes(p.bytesDone)}`,
      )
      .join(', ');
  return (p) => {
    const prev = phases.get(p.phase);
    phases.set(p.phase, p);
    const now = performance.now();
    const phaseDone =
      p.bytesTotal > 0 &&
      p.bytesDone >= p.bytesTotal &&
      !(prev && prev.bytesTotal > 0 && prev.bytesDone >= prev.bytesTotal);
    const text = `${line()}${p.note ? ` ${p.note}` : ''}`;
    // A line that says nothing new (two phases completing at once) is not repeated.
    if ((now - lastAt >= 500 || phaseDone) && text !== lastLine) {
      log(`  ${line()}  (${fmtSig(p.tMs)} ms)${p.note ? ` ${p.note}` : ''}`);
      lastAt = now;
      lastLine = text;
    }
  };
}
