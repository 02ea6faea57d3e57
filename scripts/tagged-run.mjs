/**
 * Runs a command with each line of its output (stdout and stderr apart) written with a tag in front, for
 * the test scripts that run several at once (scripts/test-browser.mjs, scripts/test-side-by-side.mjs).
 */
import { spawn } from 'node:child_process';

/**
 * Spawns `command args…` (colour off unless FORCE_COLOR is set) and copies its lines to this process's
 * stdout and stderr, each after `tag` (may be empty).
 * @returns its exit status (1 when a signal ended it).
 */
export function runTagged(tag, command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: process.env.FORCE_COLOR ?? '0' },
    });
    for (const [stream, out] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ]) {
      let rest = '';
      stream.on('data', (d) => {
        const lines = (rest + d).split('\n');
        rest = lines.pop();
        for (const l of lines) out.write(`${tag}${l}\n`);
      });
      stream.on('end', () => rest && out.write(`${tag}${rest}\n`));
    }
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}
