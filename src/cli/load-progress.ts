/**
 * Load progress on stderr, the same lines in every command: each phase's state (download, upload,
 * compile…), at most one line per 500 ms plus one when a phase completes, so a long load is never silent.
 */
import type { LoadProgress } from '../core/types.ts';
import { fmtBytes, fmtSig } from '../util/format.ts';

/**
 * A `LoadProgress` handler that writes lines through `log` (e.g. `bench: …` on stderr).
 * Each line lists every phase seen so far that has something to say: `compile D/N pipelines`, or `PHASE
 * done / total` in bytes (`PHASE done` while the total is unknown). A byte phase with no bytes and no total
 * yet (a fetch that has not started, or a local file's, which has none) is left out rather than printed as
 * `fetch 0 B`; a line with nothing in it is not printed.
 */
export function loadProgressLogger(log: (line: string) => void): (p: LoadProgress) => void {
  const phases = new Map<string, LoadProgress>();
  let lastAt = 0;
  let lastLine = '';
  const line = () =>
    [...phases.values()]
      .filter((p) => p.phase === 'compile' || p.bytesDone > 0 || p.bytesTotal > 0)
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
    const figures = line();
    const text = `${figures}${p.note ? ` ${p.note}` : ''}`;
    // A line that says nothing new (two phases completing at once) is not repeated, nor an empty one.
    if ((now - lastAt >= 500 || phaseDone) && text !== lastLine && text !== '') {
      log(`  ${figures || p.note}  (${fmtSig(p.tMs)} ms)${figures && p.note ? ` ${p.note}` : ''}`);
      lastAt = now;
      lastLine = text;
    }
  };
}
